"""Flawed variant of level1/23_Softmax: the normaliser covers only the first chunk of each row.

flaw: wrong: the max and the sum come from the row's first BLOCK columns only (outputs too large by ~24x at the task's shape, yet all below KernelBench's atol of 1e-4)
kernelbench: pass
"""

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
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    cols = tl.arange(0, BLOCK)
    # A finite floor for the running max keeps 2^(m - m_new) free of (-inf) - (-inf).
    m = tl.full([BLOCK], -1.0e38, dtype=tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, BLOCK, BLOCK):
        mask = c0 + cols < n_cols
        x = tl.load(x_row + c0 + cols, mask=mask, other=float("-inf")).to(tl.float32) * LOG2E
        m_new = tl.maximum(m, x)
        s = s * tl.exp2(m - m_new) + tl.exp2(x - m_new)
        m = m_new
    row_max = tl.max(m, axis=0)
    inv_sum = 1.0 / tl.sum(s * tl.exp2(m - row_max), axis=0)
    for c0 in range(0, n_cols, BLOCK):
        mask = c0 + cols < n_cols
        x = tl.load(x_row + c0 + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        y = tl.exp2(x * LOG2E - row_max) * inv_sum
        tl.store(out_row + c0 + cols, y.to(out_ptr.dtype.element_ty), mask=mask, eviction_policy="evict_first")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        block = min(16384, next_pow2(n_cols))
        softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0), BLOCK=block, num_warps=16)
        return out
