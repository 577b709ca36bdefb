"""A kernel that stores far outside its output (an unmasked offset of 2^40 elements): an
illegal memory access that poisons the CUDA context.

source: issue 3 fault list (GPU: illegal memory access)
task: l1_relu
expect: RUNTIME_ERROR
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def wild_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK) + (1 << 40)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        wild_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        torch.cuda.synchronize()
        return y
