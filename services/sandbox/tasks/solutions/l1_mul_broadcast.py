"""Triton solution for l1_mul_broadcast: each element reads its channel's factor."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mul_channel_kernel(x_ptr, y_ptr, out_ptr, n_elements, channels, length, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + (offsets // length) % channels, mask=mask).to(tl.float32)
    tl.store(out_ptr + offsets, (x * y).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        block = min(1024, triton.next_power_of_2(n))
        grid = (triton.cdiv(n, block),)
        mul_channel_kernel[grid](x, y, out, n, y.shape[0], x.shape[-1], BLOCK_SIZE=block, num_warps=4)
        return out
