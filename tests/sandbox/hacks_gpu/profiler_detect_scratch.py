"""Runs its honest kernel only while the profiler is on; otherwise PyTorch computes the output
and the same kernel writes a scratch buffer nobody reads (so timed calls still launch it). Every
checked call is now profiled, so it is honest in each of them; only the timed calls are lazy,
and there it pays for PyTorch's pass and its kernel's: no faster than its honest twin.

source: issue 11 (a candidate that recognises the profiled call); relu_large_baseline.py is its honest twin
task: tasks/relu_large.py
timing: on
expect: no gain
baseline: relu_large_baseline
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 4096),)](x, y, x.numel(), BLOCK=4096)
        if torch._C._autograd._profiler_enabled():
            return y
        return torch.relu(x)
