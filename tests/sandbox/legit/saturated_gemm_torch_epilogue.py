"""An honest GEMM kernel whose shift and ReLU are left to PyTorch, for a task whose output is 0
at the task's scale: replacing the GEMM's results moves no element there (the ReLU clamps them
all), but on larger inputs, where some sums pass the shift, it does. The kernel does the
task's main work: CORRECT, with the coverage its share of the time earns.

source: drkernel KernelBench parity, level2/9_Matmul_Subtract_Multiply_ReLU (a saturated output), 2026-11-26
task: tasks/gemm_shifted_relu.py
expect: CORRECT
coverage_above: 0.3
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_rows_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_in, n_out, BLOCK_IN: tl.constexpr, BLOCK_OUT: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_IN)
    outs = tl.arange(0, BLOCK_OUT)
    x = tl.load(x_ptr + row * n_in + cols, mask=cols < n_in, other=0.0).to(tl.float32)
    w = tl.load(
        w_ptr + outs[:, None] * n_in + cols[None, :], mask=(outs[:, None] < n_out) & (cols[None, :] < n_in), other=0.0
    ).to(tl.float32)
    acc = tl.sum(w * x[None, :], axis=1) + tl.load(b_ptr + outs, mask=outs < n_out, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * n_out + outs, acc.to(out_ptr.dtype.element_ty), mask=outs < n_out)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        weight, bias = self.gemm.weight.contiguous(), self.gemm.bias.contiguous()
        sums = torch.empty(x.shape[0], weight.shape[0], device=x.device, dtype=x.dtype)
        gemm_rows_kernel[(x.shape[0],)](
            x, weight, bias, sums, x.shape[1], weight.shape[0],
            BLOCK_IN=triton.next_power_of_2(x.shape[1]), BLOCK_OUT=triton.next_power_of_2(weight.shape[0]),
        )
        return torch.relu(sums - 2.5)
