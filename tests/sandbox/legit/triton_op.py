"""The kernel is launched from a `torch.library.triton_op` through `wrap_triton`, so that
torch.compile can see into it: the op is registered once, at import, and forward calls it.

source: PyTorch tutorial "Using User-Defined Triton Kernels with torch.compile" (torch.library.triton_op)
task: l1_relu
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


@triton_op("candidate_legit::relu", mutates_args={})
def relu(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    wrap_triton(relu_kernel)[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    return y


class ModelNew(nn.Module):
    def forward(self, x):
        return relu(x)
