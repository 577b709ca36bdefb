"""Flawed variant of level1/29_Softplus: the positive branch of softplus is missing.

flaw: wrong: drops the max(x, 0) term: computes log(1 + exp(-|x|)) for every x
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
def softplus_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    soft = tl.log(1.0 + tl.exp(-tl.abs(x)))
    y = tl.where(x > 20.0, x, soft)
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        block = min(4096, next_pow2(max(n, 1)))
        softplus_kernel[(cdiv(n, block),)](x, out, n, BLOCK_SIZE=block, num_warps=8)
        return out
