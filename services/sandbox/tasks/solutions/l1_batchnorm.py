"""Triton solution for l1_batchnorm: the per-channel scale and shift are computed from the
stored statistics inside the elementwise kernel, so one pass reads x once and writes once."""

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
def batchnorm_kernel(
    x_ptr, mean_ptr, var_ptr, weight_ptr, bias_ptr, out_ptr,
    n_elements, channels, spatial, eps,
    BLOCK_SIZE: tl.constexpr,
):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    channel = (offsets // spatial) % channels
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    mean = tl.load(mean_ptr + channel, mask=mask).to(tl.float32)
    var = tl.load(var_ptr + channel, mask=mask).to(tl.float32)
    weight = tl.load(weight_ptr + channel, mask=mask).to(tl.float32)
    bias = tl.load(bias_ptr + channel, mask=mask).to(tl.float32)
    y = (x - mean) * (weight * tl.math.rsqrt(var + eps)) + bias
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(num_features))
        self.bias = nn.Parameter(0.1 * torch.randn(num_features))
        self.register_buffer("running_mean", 0.1 * torch.randn(num_features))
        self.register_buffer("running_var", 0.5 + torch.rand(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        channels = x.shape[1]
        block = min(1024, next_pow2(n))
        grid = (cdiv(n, block),)
        batchnorm_kernel[grid](
            x, self.running_mean, self.running_var, self.weight, self.bias, out,
            n, channels, n // (x.shape[0] * channels), float(self.eps),
            BLOCK_SIZE=block, num_warps=4,
        )
        return out
