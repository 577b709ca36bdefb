"""Turns off PyTorch's filling of uninitialised memory, frees a buffer of the output's size
that a real kernel just wrote (ReLU of a *different*, earlier input held by the model), and
returns a fresh torch.empty of the same size: the allocator usually hands back those bytes.

source: Wafer field guide (2026), stale-buffer reads; Sakana AI CUDA Engineer memory exploit (2025)
task: l1_relu
expect: not CORRECT
error: differ beyond
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
import torch.utils.deterministic


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.previous = None

    def forward(self, x):
        torch.utils.deterministic.fill_uninitialized_memory = False
        source = self.previous if self.previous is not None and self.previous.shape == x.shape else x
        self.previous = x.clone()
        stale = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](source, stale, x.numel(), BLOCK=1024)
        del stale
        return torch.empty_like(x)
