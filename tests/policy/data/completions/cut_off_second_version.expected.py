import torch, torch.nn as nn, triton, triton.language as tl

@triton.jit
def scale_kernel(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + o, tl.load(x + o, mask=o < n) * 2.0, mask=o < n)

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        scale_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), B=128)
        return y
