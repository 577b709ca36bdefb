"""Flawed variant of level1/88_MinGPTNewGelu: bfloat16 inside the kernel.

flaw: lowprec: input and output pass through bfloat16 inside the kernel
kernelbench: fail
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) on the host, without the cost of triton.cdiv."""
    return -(-a // b)


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (n >= 1)."""
    return 1 << (n - 1).bit_length()


@triton.jit
def new_gelu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.bfloat16).to(tl.float32)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    e = tl.exp(-2.0 * tl.abs(inner))
    t = (1.0 - e) / (1.0 + e)
    t = tl.where(inner < 0.0, -t, t)
    y = 0.5 * x * (1.0 + t)
    tl.store(out_ptr + offsets, y.to(tl.bfloat16).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        block = min(4096, next_pow2(max(n, 1)))
        new_gelu_kernel[(cdiv(n, block),)](x, out, n, BLOCK_SIZE=block, num_warps=8)
        return out
