"""NumPy reduces each row as two partial sums, in pieces of 128 floats (each too small to count
alone); the kernel only adds the partials.

source: drkernel issue 11, fourth red team of 2026-11-27 (eighteenth session), probes not in the corpus before
task: l1_sum_dim
expect: CORRECT
coverage_below: 0.1
feedback: made out of the judge's sight
"""
import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_halves(p_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(p_ptr + offs, mask=mask, other=0.0)
    b = tl.load(p_ptr + n + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, (a + b).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        xn = np.moveaxis(x.detach().float().numpy().astype(np.float64), self.dim, -1)
        half = xn.shape[-1] // 2
        parts = np.stack([xn[..., :half].sum(-1), xn[..., half:].sum(-1)], axis=0).astype(np.float32)
        out_shape = list(x.shape)
        out_shape[self.dim] = 1
        y = torch.empty(out_shape, dtype=x.dtype, device=x.device)
        yf = y.view(-1)
        flat = parts.reshape(2, -1)
        total = flat.shape[1]
        chunk = 120
        for start in range(0, total, chunk):
            stop = min(total, start + chunk)
            p = torch.from_numpy(np.ascontiguousarray(flat[:, start:stop]))
            n = stop - start
            add_halves[(1,)](p, yf[start:stop], n, BLOCK=128)
        return y
