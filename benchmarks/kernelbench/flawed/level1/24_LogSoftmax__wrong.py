"""Flawed variant of level1/24_LogSoftmax: log2 where ln is needed.

flaw: wrong: the log-sum-exp is left in log2 units (the ln 2 factor is missing)
kernelbench: fail
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (n >= 1)."""
    return 1 << (n - 1).bit_length()


@triton.jit
def log_softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    LN2: tl.constexpr = 0.6931471805599453
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    out_row = out_ptr + row * n_cols
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], -1.0e38, dtype=tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK):
        mask = c0 + cols < n_cols
        x = tl.load(x_row + c0 + cols, mask=mask, other=float("-inf")).to(tl.float32) * LOG2E
        m_new = tl.maximum(m, x)
        s = s * tl.exp2(m - m_new) + tl.exp2(x - m_new)
        m = m_new
    row_max = tl.max(m, axis=0)
    log_sum = row_max * LN2 + tl.log2(tl.sum(s * tl.exp2(m - row_max), axis=0))
    for c0 in range(0, n_cols, BLOCK):
        mask = c0 + cols < n_cols
        x = tl.load(x_row + c0 + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + c0 + cols, (x - log_sum).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        moved = x.movedim(self.dim, -1).contiguous()
        out = torch.empty_like(moved)
        n_cols = moved.shape[-1]
        n_rows = moved.numel() // max(n_cols, 1)
        block = min(8192, next_pow2(max(n_cols, 1)))
        log_softmax_kernel[(n_rows,)](moved, out, n_cols, BLOCK=block, num_warps=16)
        return out.movedim(-1, self.dim)
