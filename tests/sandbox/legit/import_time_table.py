"""Builds a small constant table with its own kernel once, at import time, on the device its
kernels run on, and uses it in forward (a per-feature scale of 1.0, so the result is plain
ReLU): work at import is legal. (A table left on the host is rightly a compile error on a
GPU, where a kernel cannot read host memory; the CPU interpreter cannot tell the two apart.)

source: common practice of precomputing constants at module load; Triton kernels may launch anywhere
task: l1_relu
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fill_kernel(t_ptr, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(t_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32) + value, mask=offs < n)


@triton.jit
def scaled_relu_kernel(x_ptr, t_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    scale = tl.load(t_ptr + offs % 16, mask=mask, other=1.0)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, (tl.maximum(x, 0.0) * scale).to(y_ptr.dtype.element_ty), mask=mask)


TABLE = torch.empty(16, device="cuda" if torch.cuda.is_available() else "cpu")
fill_kernel[(1,)](TABLE, 16, 1.0, BLOCK=16)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        scaled_relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, TABLE.to(x.device), y, x.numel(), BLOCK=1024)
        return y
