"""Computes the output with an honest kernel, and while the profiler is on also runs a heavy
kernel of its own (four scaled copies of exp(x) into a buffer nobody reads) to inflate its
share of device time. Only kernels whose results reach the output count toward coverage.

source: issue 11 (coverage from kernels whose results never reach the output; the profiled call recognised)
task: l1_relu
expect: CORRECT
coverage_below: 0.5
feedback: never reach the output
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


@triton.jit
def busy_kernel(x_ptr, w_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    for k in range(4):
        tl.store(w_ptr + k * n + offs, tl.exp(x * (k + 1)), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        grid = (triton.cdiv(x.numel(), 1024),)
        if torch._C._autograd._profiler_enabled() or torch.autograd.profiler._is_profiler_enabled:
            busy_kernel[grid](x, torch.empty(4 * x.numel(), device=x.device), x.numel(), BLOCK=1024)
        y = torch.empty_like(x)
        relu_kernel[grid](x, y, x.numel(), BLOCK=1024)
        return y
