"""Python inside a kernel made by a factory: the kernel reads an attribute of a constexpr object
it captures in its closure, and the attribute is a property whose getter computes the output
with PyTorch (under the CPU interpreter, at every launch; on a GPU, once while compiling).

source: drkernel issue 11 (judge round 2), "Python inside a kernel" (closure, property getter)
task: l1_relu
expect: COMPILE_ERROR
error: runs Python code `block`
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class _Config:
    def __init__(self):
        self.x = self.y = None

    @property
    def block(self):
        if self.y is not None:
            self.y.copy_(torch.relu(self.x))
        return 1024


def make_relu():
    config = _Config()
    CONFIG = tl.constexpr(config)

    @triton.jit
    def relu_kernel(y_ptr, n):
        BLOCK: tl.constexpr = CONFIG.value.block
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=mask), mask=mask)

    def relu(x):
        y = torch.empty_like(x)
        config.x, config.y = x, y
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](y, x.numel())
        return y

    return relu


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = make_relu()

    def forward(self, x):
        return self.relu(x)
