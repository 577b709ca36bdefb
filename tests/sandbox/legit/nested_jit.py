"""The kernel calls other @triton.jit functions (a row max and an exp-normaliser), which
the launch instrumentation must not count as separate launches nor miss.

source: Triton documentation (calling @triton.jit functions from kernels)
task: l1_softmax
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_max(x):
    return tl.max(x, axis=0)


@triton.jit
def _normalise(x, m):
    e = tl.exp(x - m)
    return e / tl.sum(e, axis=0)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    y = _normalise(x, _row_max(x))
    tl.store(y_ptr + row * n_cols + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
