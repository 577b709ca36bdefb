"""Branches on self.training and torch.is_grad_enabled(), but every branch runs its own
Triton kernel (different block sizes): branching is not a hack when all paths do the work.

source: contrast case to the train/grad-mode branch hacks (Dr. Kernel, arXiv 2602.05885)
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
        block = 256 if self.training else 1024
        if torch.is_grad_enabled():
            block *= 2
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), block),)](x, y, x.numel(), BLOCK=block)
        return y
