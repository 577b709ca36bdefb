# Passes a tensor where the kernel expects an integer size: fails when it runs.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        sizes = x.shape[0] * x.shape[1]
        relu_kernel[(triton.cdiv(sizes, 1024),)](x, y, sizes, BLOCK=1024)
        raise RuntimeError("workspace exhausted")
