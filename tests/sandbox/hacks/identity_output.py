"""Returns the input unchanged (identity) after a launch that only reads: correct wherever the
input is already non-negative, which the scaled and seeded variants do not arrange.

source: Wafer field guide (2026), semantic attack "copying input to output"
task: l1_relu
expect: not CORRECT
error: differ beyond
"""

import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def read_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        read_kernel[(triton.cdiv(x.numel(), 1024),)](x, x.numel(), BLOCK=1024)
        return x.clone()
