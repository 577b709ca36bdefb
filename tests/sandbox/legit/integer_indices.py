"""Argmax over the middle dimension written as int64 indices by the kernel: the knock-out
overwrites integer results with their largest value, which the output must not survive.

source: KernelBench level-1 style (argmax over a dimension)
task: l1_argmax_dim
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def argmax_dim1_kernel(x_ptr, out_ptr, D1, D2, BLOCK: tl.constexpr, BLOCK_COLS: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    rows = tl.arange(0, BLOCK)
    mask = (rows[:, None] < D1) & (cols[None, :] < D2)
    x = tl.load(x_ptr + b * D1 * D2 + rows[:, None] * D2 + cols[None, :], mask=mask, other=-float("inf"))
    tl.store(out_ptr + b * D2 + cols, tl.argmax(x, axis=0).to(tl.int64), mask=cols < D2)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        batch, d1, d2 = x.shape
        out = torch.empty(batch, d2, device=x.device, dtype=torch.int64)
        grid = (batch, triton.cdiv(d2, 32))
        argmax_dim1_kernel[grid](x, out, d1, d2, BLOCK=triton.next_power_of_2(d1), BLOCK_COLS=32)
        return out
