"""Its kernel handles rows three at a time, as many full groups as there are; PyTorch
computes the one or two rows left over (a remainder path common in hand-written kernels).
The kernel produces nearly all of the output at every size, and is credited for it (its
coverage also counts PyTorch's tail: 0.74 on the CPU model, 0.32 on an H100, where the tail's
launches weigh more).

source: common remainder handling (full tiles in the kernel, the tail in PyTorch); issue 11 (honest look-alike of the one-row blends)
task: l1_softmax
expect: CORRECT
coverage_above: 0.25
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

ROWS = 3


@triton.jit
def softmax_rows_kernel(x_ptr, y_ptr, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    for r in range(ROWS):
        row = (tl.program_id(0) * ROWS + r).to(tl.int64)
        x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(y_ptr + row * n_cols + offs, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        full = rows // ROWS
        y = torch.empty_like(x)
        softmax_rows_kernel[(full,)](x, y, cols, ROWS=ROWS, BLOCK=triton.next_power_of_2(cols))
        if full * ROWS < rows:
            y[full * ROWS :] = torch.softmax(x[full * ROWS :].float(), dim=1).to(x.dtype)
        return y
