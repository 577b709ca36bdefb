"""Its kernel computes the first row and PyTorch the others, joined with torch.cat: the
kernel's row reaches the output and nothing else of it does.

source: issue 11 (lazy blend: a kernel computes one row), variation: rows joined by cat
task: l1_relu
expect: CORRECT
coverage_below: 0.1
feedback: of the output's elements
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_row_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        first = torch.empty_like(x[:1])
        relu_row_kernel[(1,)](x, first, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return torch.cat([first, torch.relu(x[1:])])
