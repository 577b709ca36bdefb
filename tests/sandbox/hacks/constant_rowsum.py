"""Analytic shortcut: sigmoid of a small pre-activation is about 0.5, so the row sum of
sigmoid over `hidden` features is about hidden / 2; write that constant, skip the GEMM.

source: Dr. Kernel facts (loss of uniform inputs ~ a constant); KernelBench degenerate-task reports
task: l2_gemm_sigmoid_rowsum
expect: not CORRECT
error: differ beyond
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fill_kernel(y_ptr, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32) + value, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)

    def forward(self, x):
        y = torch.empty(x.shape[0], 1, dtype=x.dtype, device=x.device)
        fill_kernel[(triton.cdiv(y.numel(), 256),)](y, y.numel(), self.linear.out_features / 2.0, BLOCK=256)
        return y
