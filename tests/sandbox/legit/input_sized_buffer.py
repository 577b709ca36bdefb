"""Clamps into a fresh buffer shaped like its input: most elements come out equal to the
input's (only those outside [min_val, max_val] change), so the buffer looks much like a copy
of an argument, yet the kernel computes every element of it.

source: KernelBench level-1 hardtanh; issue 11 (honest look-alike of "a kernel stores its input back")
task: l1_hardtanh
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def clamp_kernel(x_ptr, y_ptr, n, low, high, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.minimum(tl.maximum(x, low), high), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, min_val, max_val):
        super().__init__()
        self.min_val, self.max_val = min_val, max_val

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        clamp_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), self.min_val, self.max_val, BLOCK=1024)
        return y
