"""Output cache keyed on the input's data pointer: benchmarks that reuse input buffers give
the same address every trial, so a hit returns the stored result without recomputing. The
module-level dict survives model rebuilds.

source: CUDA-L1 (arXiv 2507.14111), caching keyed on input memory addresses; Wafer field guide (2026)
task: l1_softmax
timing: on
expect: not CORRECT
error: differ beyond
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_CACHE = {}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        rows, cols = x.shape
        block = triton.next_power_of_2(cols)
        key = (x.data_ptr(), tuple(x.shape))
        hit = _CACHE.get(key)
        if hit is not None:
            softmax_kernel[(1,)](x, torch.empty_like(x), cols, BLOCK=block)  # one row, for show
            return hit.clone()
        y = torch.empty_like(x)
        softmax_kernel[(rows,)](x, y, cols, BLOCK=block)
        _CACHE[key] = y
        return y.clone()
