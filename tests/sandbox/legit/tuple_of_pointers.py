"""The kernel takes its pointers as one tuple argument (and its sizes as another), unpacked inside
the kernel: Triton passes tuples, nested ones included, as kernel arguments.

source: Triton documentation and tests (tuple kernel arguments, Triton >= 3.2)
task: l1_swish
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def swish_kernel(ptrs, sizes, BLOCK: tl.constexpr):
    x_ptr, y_ptr = ptrs
    n = sizes[0]
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, (x * tl.sigmoid(x)).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        swish_kernel[(triton.cdiv(n, 512),)]((x, y), (n,), BLOCK=512)
        return y
