"""An honest ReLU on inputs that are all non-negative (KernelBench's 19_ReLU draws them with
torch.rand): what the kernel stores equals its input, which is the task's own answer, not a
copy that does no work.

source: KernelBench level1/19_ReLU and 20_LeakyReLU (torch.rand inputs); held-out tester of issue 8
task: tasks/relu_nonnegative.py
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
