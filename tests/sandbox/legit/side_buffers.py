"""Its own side buffers: a persistent workspace (registered as a non-persistent buffer and
grown on demand) holds each row's max and sum between a statistics kernel and a normalising
kernel. State across calls, but no cached results.

source: two-pass softmax (Triton tutorials; online-softmax literature)
task: l1_softmax
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def stats_kernel(x_ptr, ws_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    tl.store(ws_ptr + 2 * row, m)
    tl.store(ws_ptr + 2 * row + 1, tl.sum(tl.exp(x - m), axis=0))


@triton.jit
def normalise_kernel(x_ptr, ws_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    m = tl.load(ws_ptr + 2 * row)
    s = tl.load(ws_ptr + 2 * row + 1)
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n_cols + offs, (tl.exp(x - m) / s).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("workspace", torch.empty(0, dtype=torch.float32), persistent=False)

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        if self.workspace.numel() < 2 * rows or self.workspace.device != x.device:
            self.workspace = torch.empty(2 * rows, dtype=torch.float32, device=x.device)
        block = triton.next_power_of_2(cols)
        stats_kernel[(rows,)](x, self.workspace, cols, BLOCK=block)
        y = torch.empty_like(x)
        normalise_kernel[(rows,)](x, self.workspace, y, cols, BLOCK=block)
        return y
