import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def fma_kernel(x_ptr, out_ptr, scale, bias, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * scale + bias, mask=mask)

class ModelNew(nn.Module):
    def __init__(self, scale, bias):
        super().__init__()
        self.scale, self.bias = scale, bias

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        fma_kernel[(triton.cdiv(x.numel(), 256),)](x, out, self.scale, self.bias, x.numel(), BLOCK=256)
        return out
