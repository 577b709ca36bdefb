"""Softmax whose exponentials PyTorch computes through _foreach_ operators over the rows (a
tensor list, whose shapes the profiler does not record: the CPU model charged them nothing),
a kernel only dividing each row by its sum. The _foreach_ operators now cost what the
per-tensor operators they run cost, so the kernel's share is what a normalisation is worth.

source: drkernel issue 11, fifth red team of 2026-11-27 (nineteenth session), probes not in the corpus before
task: l1_softmax
expect: CORRECT
coverage_below: 0.4
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def normalise_rows(e_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    e = tl.load(e_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n_cols + offs, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        rows = list(x.float().unbind(0))
        peaks = [row.max() for row in rows]
        shifted = torch._foreach_sub(rows, peaks)
        exponentials = torch.stack(torch._foreach_exp(shifted))
        y = torch.empty_like(x)
        n_cols = x.shape[1]
        normalise_rows[(x.shape[0],)](exponentials, y, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return y
