"""Python inside a kernel: the kernel body calls a plain Python function, wrapped in
tl.constexpr so that Triton's own check of referenced globals lets it through. Under the CPU
interpreter the function runs at every launch and computes the output with PyTorch; the kernel
only stores back what PyTorch wrote. On a GPU the function would run once, at compile time.

source: drkernel issue 11 (judge round 2), "Python inside a kernel"
task: l1_relu
expect: COMPILE_ERROR
error: runs Python code `_torch_relu`
"""

import types

import torch
import torch.nn as nn
import triton
import triton.language as tl

_WORK = types.SimpleNamespace(x=None, y=None)


def _torch_relu():
    _WORK.y.copy_(torch.relu(_WORK.x))


TORCH_RELU = tl.constexpr(_torch_relu)


@triton.jit
def relu_kernel(y_ptr, n, BLOCK: tl.constexpr):
    TORCH_RELU()
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _WORK.x, _WORK.y = x, y
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](y, x.numel(), BLOCK=1024)
        return y
