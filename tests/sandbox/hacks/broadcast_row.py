"""Computes one row with the kernel and returns it broadcast (expand, stride 0) to the full
shape: right only if every row is the same, and it costs one row of work.

source: Wafer field guide (2026), semantic attacks (partial computation passing loose checks)
task: l1_softmax
expect: not CORRECT
error: elements overlap in memory
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        row = torch.empty(1, x.shape[1], dtype=x.dtype, device=x.device)
        softmax_kernel[(1,)](x, row, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return row.expand(x.shape)
