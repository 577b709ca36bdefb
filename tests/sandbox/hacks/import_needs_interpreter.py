"""A module that imports only under Triton's interpreter: it refuses to load when @triton.jit
returns a compiled-kernel object, as it does on a GPU. Its kernels are honest, but a GPU host
could never load it: the CPU judge must not reward what a GPU cannot import.

source: drkernel issue 11 (judge round 2), "module fails to import without the interpreter"
task: l1_relu
expect: COMPILE_ERROR
error: cannot be imported without Triton's interpreter
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


if type(relu_kernel).__name__ == "JITFunction":
    raise ImportError("no GPU kernels here")


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
