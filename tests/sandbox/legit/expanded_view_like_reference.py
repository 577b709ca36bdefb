"""Computes row sums with its kernel and returns them expanded to the input's shape, the same
stride-0 view the reference returns.

source: KernelBench tasks whose reference returns an expand()/broadcast view
task: tasks/row_expand.py
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        sums = torch.empty(rows, 1, device=x.device, dtype=x.dtype)
        row_sum_kernel[(rows,)](x, sums, cols, BLOCK=256)
        return sums.expand(-1, cols)
