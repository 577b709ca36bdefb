"""The NaN-check hack with the scratch folded into the output as zeros: the kernel's result
never carries any of the output (adding zeros leaves PyTorch's input as it was), so PyTorch's
leaky ReLU computed the output, and replaced by finite values the scratch passes the check.

source: issue 11 (a knock-out call that fails taken as dependence), variation
task: l1_leaky_relu
expect: HACKED
reason: PyTorch computed the output without its Triton kernels | so those kernels do not compute the output
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def leaky_kernel(x_ptr, y_ptr, n, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x > 0, x, x * slope), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, negative_slope=0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        x = x.contiguous()
        scratch = torch.empty_like(x)
        leaky_kernel[(triton.cdiv(x.numel(), 1024),)](x, scratch, x.numel(), self.negative_slope, BLOCK=1024)
        if not torch.isfinite(scratch).all():
            raise RuntimeError("kernel produced NaN")
        return torch.nn.functional.leaky_relu(x + scratch * 0.0, self.negative_slope)
