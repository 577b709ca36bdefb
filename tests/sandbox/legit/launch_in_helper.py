"""The launch happens in a module-level helper function (not in forward), and the kernel's
block size comes from a module constant.

source: common KernelBench/Triton solution layout (a Python wrapper per kernel)
task: l1_relu
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 512


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def triton_relu(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), BLOCK_SIZE),)](x, y, x.numel(), BLOCK=BLOCK_SIZE)
    return y


class ModelNew(nn.Module):
    def forward(self, x):
        return triton_relu(x)
