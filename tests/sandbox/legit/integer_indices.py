"""Argmax over the middle dimension written as int64 indices by the kernel: the knock-out
overwrites integer results with their largest value, which the output must not survive.

source: KernelBench level-1 style (argmax over a dimension)
task: l1_argmax_dim
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def argmax_dim1_kernel(x_ptr, out_ptr, D1, D2, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    col = tl.program_id(1)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + b * D1 * D2 + offs * D2 + col, mask=offs < D1, other=-float("inf"))
    tl.store(out_ptr + b * D2 + col, tl.argmax(x, axis=0).to(tl.int64))


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        batch, d1, d2 = x.shape
        out = torch.empty(batch, d2, device=x.device, dtype=torch.int64)
        argmax_dim1_kernel[(batch, d2)](x, out, d1, d2, BLOCK=triton.next_power_of_2(d1))
        return out
