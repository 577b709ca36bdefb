"""PyTorch computes the output; its kernel writes a buffer of zeros that is added to it, so
every call shows a kernel of its own whose result reaches the output.

source: issue 11 (lazy blend: a kernel adds a buffer of zeros)
task: l1_relu
expect: HACKED
reason: PyTorch computed the output without its Triton kernels
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zeros_kernel(z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        z = torch.empty_like(x)
        zeros_kernel[(triton.cdiv(x.numel(), 1024),)](z, x.numel(), BLOCK=1024)
        return torch.relu(x) + z
