"""Triton solution for l1_layernorm. Each program owns BLOCK_M rows of the last dimension and
walks them in BLOCK_N chunks three times: the mean, the centred (numerically safe) variance, then
the normalised, affine output. The later passes re-read rows a program has just read, so they
come from cache."""

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
def layernorm_kernel(
    x_ptr, weight_ptr, bias_ptr, out_ptr, n_rows, n_cols, eps,
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
        x = tl.load(x_ptr + row_start + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
        b = tl.load(bias_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
        y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
        tl.store(out_ptr + row_start + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_size: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(normalized_size))
        self.bias = nn.Parameter(0.1 * torch.randn(normalized_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n_cols = self.weight.numel()
        n_rows = x.numel() // n_cols
        block_n = min(next_pow2(n_cols), 2048)
        block_m = min(next_pow2(n_rows), max(1, 4096 // block_n))
        grid = (cdiv(n_rows, block_m),)
        layernorm_kernel[grid](
            x, self.weight, self.bias, out, n_rows, n_cols, float(self.eps),
            BLOCK_M=block_m, BLOCK_N=block_n, num_warps=4,
        )
        return out
