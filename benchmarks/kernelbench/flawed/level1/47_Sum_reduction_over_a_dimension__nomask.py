"""Flawed variant of level1/47_Sum_reduction_over_a_dimension: no mask along the reduced dim.

flaw: nomask: the loads have no mask along the reduced dim (right only when it is a multiple of BLOCK_R)
kernelbench: pass
"""

import math

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
def reduce_kernel(x_ptr, out_ptr, R, inner, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr):
    n_col_blocks = tl.cdiv(inner, BLOCK_I)
    outer = tl.program_id(0).to(tl.int64) // n_col_blocks
    cols = (tl.program_id(0) % n_col_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    col_mask = cols < inner
    rows = tl.arange(0, BLOCK_R)
    base = x_ptr + outer * R * inner
    acc = tl.zeros([BLOCK_R, BLOCK_I], dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        mask = tl.broadcast_to(col_mask[None, :], (BLOCK_R, BLOCK_I))
        offsets = (r0 + rows)[:, None].to(tl.int64) * inner + cols[None, :]
        x = tl.load(base + offsets, mask=mask, other=0.0).to(tl.float32)
        acc += x
    result = tl.sum(acc, axis=0)
    tl.store(out_ptr + outer * inner + cols, result.to(out_ptr.dtype.element_ty), mask=col_mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        dim = self.dim % x.dim()
        outer = math.prod(x.shape[:dim])
        R = x.shape[dim]
        inner = math.prod(x.shape[dim + 1 :])
        out = torch.empty((outer, inner), dtype=x.dtype, device=x.device)
        block_i = min(256, next_pow2(max(inner, 1)))
        block_r = min(16, next_pow2(max(R, 1)))
        reduce_kernel[(outer * cdiv(inner, block_i),)](x, out, R, inner, BLOCK_R=block_r, BLOCK_I=block_i, num_warps=4)
        return out.reshape(x.shape[:dim] + (1,) + x.shape[dim + 1 :])
