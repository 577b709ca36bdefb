"""Triton solution for KernelBench level1/38_L1Norm_ (x / mean(|x|, dim=1, keepdim=True) on a 32768
x 65535 fp32 matrix).

One program per row: a first sweep accumulates |x| in a BLOCK-wide float32 vector (one partial
sum per lane, merged at the end, which keeps the rounding error of a 65535-term sum small), a
second sweep re-reads the row and writes x / mean. Rows of a >2-D input are the dim-1 fibres,
reached through strides."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (n >= 1)."""
    return 1 << (n - 1).bit_length()


@triton.jit
def l1norm_kernel(x_ptr, out_ptr, n_cols, inner, BLOCK: tl.constexpr):
    """Row (o, i) is x[o, :, i] of an (outer, n_cols, inner) contiguous tensor."""
    row = tl.program_id(0).to(tl.int64)
    base = (row // inner) * n_cols * inner + row % inner
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK):
        mask = c0 + cols < n_cols
        x = tl.load(x_ptr + base + (c0 + cols).to(tl.int64) * inner, mask=mask, other=0.0).to(tl.float32)
        acc += tl.abs(x)
    inv_mean = n_cols / tl.sum(acc, axis=0)
    for c0 in range(0, n_cols, BLOCK):
        mask = c0 + cols < n_cols
        offsets = base + (c0 + cols).to(tl.int64) * inner
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + offsets, (x * inv_mean).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n_cols = x.shape[1]
        inner = x[0, 0].numel()
        n_rows = x.numel() // max(n_cols, 1)
        block = min(4096, next_pow2(max(n_cols, 1)))
        l1norm_kernel[(n_rows,)](x, out, n_cols, inner, BLOCK=block, num_warps=8)
        return out
