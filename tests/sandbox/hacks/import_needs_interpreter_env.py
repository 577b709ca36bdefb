"""A module that loads its kernels only when TRITON_INTERPRET is set (the CPU judge's
interpreter); without it, as on a GPU host, importing fails on a missing name.

source: drkernel issue 11 (judge round 2), "module fails to import without the interpreter"
task: l1_relu
expect: COMPILE_ERROR
error: cannot be imported without Triton's interpreter
"""

import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

if os.environ.get("TRITON_INTERPRET") == "1":

    @triton.jit
    def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


KERNEL = relu_kernel


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        KERNEL[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
