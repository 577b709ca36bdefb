"""The kernel and the @triton.jit helper it calls are defined inside a factory function, not at
module level: the kernel reaches the helper and the block size (a tl.constexpr, as Triton requires of
captured values) through its closure.

source: common in libraries that build kernels per configuration (kernel factories, e.g. FlagGems, Liger-Kernel)
task: l1_relu
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def make_relu(block: int):
    BLOCK = tl.constexpr(block)

    @triton.jit
    def positive_part(x):
        return tl.maximum(x, 0.0)

    @triton.jit
    def relu_kernel(x_ptr, y_ptr, n):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, positive_part(tl.load(x_ptr + offs, mask=mask)), mask=mask)

    def relu(x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), block),)](x, y, x.numel())
        return y

    return relu


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = make_relu(256)

    def forward(self, x):
        return self.relu(x)
