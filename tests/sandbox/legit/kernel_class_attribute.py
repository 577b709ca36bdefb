"""The kernel is a class attribute of a small helper class, takes its activation as a @triton.jit
function passed as a constexpr argument, and derives its block size with a
@triton.constexpr_function (compile-time Python on constexpr values, as Triton intends it).

source: drkernel issue 11 (look-alike of python_in_kernel_constexpr*: compile-time helpers used honestly)
task: l1_relu
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.constexpr_function
def lanes(warps, per_thread):
    return warps * 32 * per_thread


@triton.jit
def positive_part(v):
    return tl.maximum(v, 0.0)


class Elementwise:
    @staticmethod
    @triton.jit
    def kernel(x_ptr, y_ptr, n, FN: tl.constexpr, WARPS: tl.constexpr, PER_THREAD: tl.constexpr):
        BLOCK: tl.constexpr = lanes(WARPS, PER_THREAD)
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, FN(tl.load(x_ptr + offs, mask=mask)), mask=mask)

    def __call__(self, x, fn):
        x = x.contiguous()
        y = torch.empty_like(x)
        self.kernel[(triton.cdiv(x.numel(), 4 * 32 * 8),)](x, y, x.numel(), FN=fn, WARPS=4, PER_THREAD=8)
        return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.apply = Elementwise()

    def forward(self, x):
        return self.apply(x, positive_part)
