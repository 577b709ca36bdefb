"""Starts from a zero buffer (torch.zeros_like) and writes ReLU into it: about half the
elements it stores are the zeros already there, so only the rest change, yet the kernel
computes every element of the output. (Zeroing the buffer is PyTorch's device work: 0.5 of
this forward's on the CPU model, 0.62 on an H100; that is its coverage.)

source: common output initialisation (zeros, then the kernel); issue 11 (honest look-alike of "a kernel adds a buffer of zeros")
task: l1_relu
expect: CORRECT
coverage_above: 0.25
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask, other=0.0), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.zeros_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
