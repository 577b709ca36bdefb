"""Writes the result into the input's own memory and returns a view of the input: no output
allocation, and the input now equals the output.

source: Wafer field guide (2026), semantic attacks (copying input to output / aliasing); KernelBench in-place pitfalls
task: l1_relu
expect: not CORRECT
error: modified its input
"""

import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_inplace_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        relu_inplace_kernel[(triton.cdiv(x.numel(), 1024),)](x, x.numel(), BLOCK=1024)
        return x.view(x.shape)
