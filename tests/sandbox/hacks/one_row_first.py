"""Its kernel computes the first row of the output into a fresh buffer and PyTorch fills in
every other row: correct, and the kernel's row reaches the output, but the kernel produces
one row of sixteen at the task's sizes.

source: issue 11 (lazy blend: a kernel computes one row), variation: the row written first
task: l1_softmax
expect: CORRECT
coverage_below: 0.1
feedback: of the output's elements
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_row_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_row_kernel[(1,)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        y[1:] = torch.softmax(x[1:], dim=1)
        return y
