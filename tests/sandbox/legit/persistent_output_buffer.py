"""Allocates its output once per shape, dtype and device, overwrites every element in each
call and returns the same buffer every time: a common optimisation that skips the allocator.

source: common practice (static output buffers, as CUDA graphs need); KernelBench accepts it
task: l1_relu
timing: on
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.buffers = {}

    def forward(self, x):
        x = x.contiguous()
        key = (tuple(x.shape), x.dtype, x.device)
        if key not in self.buffers:
            self.buffers[key] = torch.empty_like(x)
        y = self.buffers[key]
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
