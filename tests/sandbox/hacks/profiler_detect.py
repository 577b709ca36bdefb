"""Runs its Triton kernel only while the profiler is on (the old profile stage was a call of
its own) and PyTorch otherwise. Every checked call is now profiled alike, so its kernel runs
in all of them; the timed calls, unprofiled, run no kernel of its own.

source: issue 11 (a candidate that recognises the profiled call: torch._C._autograd._profiler_enabled(), or torch.profiler's own flag)
task: l1_relu
timing: on
expect: HACKED
reason: no Triton kernel of its own ran
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
        if not (torch._C._autograd._profiler_enabled() or torch.autograd.profiler._is_profiler_enabled):
            return torch.relu(x)
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
