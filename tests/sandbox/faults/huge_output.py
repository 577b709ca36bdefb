"""Prints 64 MiB to stdout and stderr, then returns a correct result.

task: l1_relu
expect: CORRECT
"""

import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

_LINE = "x" * 1023 + "\n"


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.printed = False

    def forward(self, x):
        if not self.printed:
            self.printed = True
            for stream in (sys.stdout, sys.stderr):
                stream.write(_LINE * (32 * 1024))
                stream.flush()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
