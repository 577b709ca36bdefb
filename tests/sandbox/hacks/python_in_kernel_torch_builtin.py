"""Python inside a kernel without a line of Python: PyTorch's own functions reach the kernel as
constexprs (no Python frame ever runs), and the body calls them on tensors held by a constexpr
namespace. Under the CPU interpreter PyTorch computes the output at every launch.

source: drkernel issue 11 (judge round 2), "Python inside a kernel" (builtins, no Python frame)
task: l1_relu
expect: COMPILE_ERROR
error: clamp_min` (torch)
"""

import types

import torch
import torch.nn as nn
import triton
import triton.language as tl

WORK = tl.constexpr(types.SimpleNamespace(x=torch.zeros(1), y=torch.zeros(1)))
CLAMP_MIN = tl.constexpr(torch.clamp_min)


@triton.jit
def relu_kernel(y_ptr, n, BLOCK: tl.constexpr):
    CLAMP_MIN(WORK.value.x, 0.0, out=WORK.value.y)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        WORK.value.x, WORK.value.y = x, y
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](y, x.numel(), BLOCK=1024)
        return y
