"""Honest Triton work inside torch.profiler.record_function ranges (a habit of code that is
profiled often): the ranges hold the candidate's own kernels and PyTorch's bookkeeping only, so
the profile still credits the kernels with the work.

source: drkernel issue 11 (look-alike of record_function_lazy_gemm: ranges around honest Triton work)
task: l1_relu
expect: CORRECT
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


class ModelNew(nn.Module):
    def forward(self, x):
        with torch.profiler.record_function("relu_forward"):
            x = x.contiguous()
            y = torch.empty_like(x)
            with torch.profiler.record_function("relu_kernel_launch"):
                relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
