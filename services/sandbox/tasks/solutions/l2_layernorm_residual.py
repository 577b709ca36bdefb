"""Triton solution for l2_layernorm_residual: layer norm, affine and the residual add fused in one
kernel. Each program owns BLOCK_M rows and walks them in BLOCK_N chunks three times: the mean, the
centred variance, then the output plus the residual."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def cdiv(a: int, b: int) -> int:
    """ceil(a / b). Host-side sizes use these plain-Python twins of triton.cdiv and
    triton.next_power_of_2: those are constexpr functions that cost microseconds per host call."""
    return -(-a // b)


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (n >= 1)."""
    return 1 << (n - 1).bit_length()


@triton.jit
def layernorm_residual_kernel(
    x_ptr, residual_ptr, weight_ptr, bias_ptr, out_ptr, n_rows, n_cols, eps,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    row_start = rows.to(tl.int64)[:, None] * n_cols
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK_N):
        cols = c0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        acc += tl.load(x_ptr + row_start + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=1) / n_cols
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK_N):
        cols = c0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        x = tl.load(x_ptr + row_start + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean[:, None], 0.0)
        acc += d * d
    rstd = tl.math.rsqrt(tl.sum(acc, axis=1) / n_cols + eps)
    for c0 in range(0, n_cols, BLOCK_N):
        cols = c0 + tl.arange(0, BLOCK_N)
        col_mask = cols < n_cols
        mask = row_mask[:, None] & col_mask[None, :]
        offsets = row_start + cols[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        res = tl.load(residual_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
        b = tl.load(bias_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
        y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :] + res
        tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size, eps=eps)
        with torch.no_grad():
            self.norm.weight.add_(0.1 * torch.randn(hidden_size))
            self.norm.bias.add_(0.1 * torch.randn(hidden_size))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        residual = residual.contiguous()
        out = torch.empty_like(x)
        n_cols = self.norm.weight.numel()
        n_rows = x.numel() // n_cols
        block_n = min(next_pow2(n_cols), 2048)
        block_m = min(next_pow2(n_rows), max(1, 4096 // block_n))
        grid = (cdiv(n_rows, block_m),)
        layernorm_residual_kernel[grid](
            x, residual, self.norm.weight, self.norm.bias, out, n_rows, n_cols, float(self.norm.eps),
            BLOCK_M=block_m, BLOCK_N=block_n, num_warps=4,
        )
        return out
