"""One kernel writes both outputs into a single (rows, 2 * cols) buffer, returned as its two
column chunks: views with gaps between their rows (strides (2 * cols, 1)), each element at an
address of its own. Was INCORRECT ("not a dense tensor"): only overlapping layouts, such as
an expand(), are refused.

source: held-out honest candidate (issue 8, second pass): fused outputs returned as chunk views
task: tasks/relu_and_sigmoid.py
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_sigmoid_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=m, other=0.0).to(tl.float32)
    base = out_ptr + row * 2 * cols
    tl.store(base + offs, tl.maximum(x, 0.0), mask=m)
    tl.store(base + cols + offs, tl.sigmoid(x), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty((rows, 2 * cols), device=x.device, dtype=x.dtype)
        relu_sigmoid_kernel[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
        relu, sigmoid = out.chunk(2, dim=1)
        return relu, sigmoid
