"""Scale, per-channel bias, clamp and tanh in one pass, with tanh from CUDA's libdevice reached
as `tl.extra.cuda.libdevice.tanh` (Triton has no tl.tanh).

source: KernelBench Triton solutions and Triton issues (tl.extra.cuda.libdevice.tanh)
task: l2_scale_bias_clamp_tanh
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_bias_clamp_tanh_kernel(x_ptr, bias_ptr, out_ptr, n, channels, spatial, scale, lo, hi, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    bias = tl.load(bias_ptr + (offs // spatial) % channels, mask=mask).to(tl.float32)
    y = tl.minimum(tl.maximum(x * scale + bias, lo), hi)
    tl.store(out_ptr + offs, tl.extra.cuda.libdevice.tanh(y).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, bias_shape: tuple, scale: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        channels = x.shape[1]
        scale_bias_clamp_tanh_kernel[(triton.cdiv(n, 1024),)](
            x, self.bias, out, n, channels, n // (x.shape[0] * channels),
            float(self.scale), float(self.clamp_min), float(self.clamp_max), BLOCK=1024,
        )
        return out
