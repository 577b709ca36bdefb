"""Triton solution for l1_rmsnorm. The input is viewed as (batch, channels, spatial); each program
owns BLOCK_P (batch, spatial) positions, accumulates the sum of squares over the channels in
BLOCK_C chunks (loads coalesced along the contiguous spatial axis), then writes x * rsqrt(ms + eps)."""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


def cdiv(a: int, b: int) -> int:
    """ceil(a / b). Host-side sizes use these plain-Python twins of triton.cdiv and
    triton.next_power_of_2: those are constexpr functions that cost microseconds per host call."""
    return -(-a // b)


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (n >= 1)."""
    return 1 << (n - 1).bit_length()


@triton.jit
def rmsnorm_kernel(x_ptr, out_ptr, n_pos, channels, spatial, eps, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr):
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    p_mask = p < n_pos
    p64 = p.to(tl.int64)
    base = (p64 // spatial) * channels * spatial + p64 % spatial
    acc = tl.zeros([BLOCK_C, BLOCK_P], dtype=tl.float32)
    for c0 in range(0, channels, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        mask = (c[:, None] < channels) & p_mask[None, :]
        x = tl.load(x_ptr + base[None, :] + c[:, None].to(tl.int64) * spatial, mask=mask, other=0.0)
        x = x.to(tl.float32)
        acc += x * x
    inv_rms = tl.math.rsqrt(tl.sum(acc, axis=0) / channels + eps)
    for c0 in range(0, channels, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        mask = (c[:, None] < channels) & p_mask[None, :]
        offsets = base[None, :] + c[:, None].to(tl.int64) * spatial
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + offsets, (x * inv_rms[None, :]).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        channels = x.shape[1]
        spatial = math.prod(x.shape[2:])
        n_pos = x.shape[0] * spatial
        block_c = min(next_pow2(channels), 64)
        block_p = min(next_pow2(n_pos), max(16, 4096 // block_c))
        grid = (cdiv(n_pos, block_p),)
        rmsnorm_kernel[grid](
            x, out, n_pos, channels, spatial, float(self.eps), BLOCK_C=block_c, BLOCK_P=block_p, num_warps=4
        )
        return out
