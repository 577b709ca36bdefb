"""A real softmax kernel computes the output; a second kernel of its own, heavier, writes
exp(x) at four scales into a buffer nobody reads: launches that buy no coverage.

source: issue 11 (wasted launches must buy nothing); Dr. Kernel (arXiv 2602.05885) PR reward
task: l1_softmax
expect: CORRECT
coverage_below: 0.5
feedback: never reach the output
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + offs, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def spread_kernel(x_ptr, s_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    for k in range(4):
        tl.store(s_ptr + k * n + offs, tl.exp(x * (k + 1)), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        block = triton.next_power_of_2(cols)
        spread_kernel[(triton.cdiv(x.numel(), 1024),)](
            x, torch.empty(4 * x.numel(), device=x.device), x.numel(), BLOCK=1024
        )
        y = torch.empty_like(x)
        softmax_kernel[(rows,)](x, y, cols, BLOCK=block)
        return y
