"""Flawed variant of level1/20_LeakyReLU: a shape-keyed output cache.

flaw: hack: caches its output by input shape: only the first call of a shape runs the kernel, later ones return that stale output
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
def leaky_relu_kernel(x_ptr, out_ptr, n_elements, negative_slope, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.where(x >= 0.0, x, x * negative_slope)
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope
        self.cache = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cached = self.cache.get((x.shape, x.dtype, x.device))
        if cached is not None:
            return cached.clone()
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        block = min(4096, next_pow2(max(n, 1)))
        leaky_relu_kernel[(cdiv(n, block),)](x, out, n, float(self.negative_slope), BLOCK_SIZE=block, num_warps=8)
        self.cache[(x.shape, x.dtype, x.device)] = out
        return out.clone()
