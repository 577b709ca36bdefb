"""Triton solution for l2_scale_bias_clamp_tanh: the whole chain in one elementwise pass."""

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
def scale_bias_clamp_tanh_kernel(
    x_ptr, bias_ptr, out_ptr, n_elements, channels, spatial, scale, clamp_min, clamp_max,
    BLOCK_SIZE: tl.constexpr,
):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    bias = tl.load(bias_ptr + (offsets // spatial) % channels, mask=mask).to(tl.float32)
    y = tl.minimum(tl.maximum(x * scale + bias, clamp_min), clamp_max)
    # tanh(y) = sign(y) * (1 - e) / (1 + e) with e = exp(-2|y|): no overflow for any y.
    e = tl.exp(-2.0 * tl.abs(y))
    t = (1.0 - e) / (1.0 + e)
    y = tl.where(y < 0.0, -t, t)
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, bias_shape: tuple, scale: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        channels = x.shape[1]
        block = min(1024, next_pow2(n))
        grid = (cdiv(n, block),)
        scale_bias_clamp_tanh_kernel[grid](
            x, self.bias, out, n, channels, n // (x.shape[0] * channels),
            float(self.scale), float(self.clamp_min), float(self.clamp_max),
            BLOCK_SIZE=block, num_warps=4,
        )
        return out
