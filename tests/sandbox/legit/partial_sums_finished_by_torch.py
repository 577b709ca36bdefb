"""The kernel does the elementwise work and one partial sum per block; PyTorch adds up the few
partial sums. Its results reach the output through a sum, which a knock-out must move.

source: common two-stage reduction in model outputs for KernelBench's losses (94-100); held-out tester of issue 8
task: tasks/mse_loss.py
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def squared_error_block_sums(p_ptr, t_ptr, sums_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32) - tl.load(t_ptr + offs, mask=mask, other=0.0)
    tl.store(sums_ptr + pid, tl.sum(d * d, axis=0))


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        p = predictions.contiguous().view(-1)
        t = targets.contiguous().view(-1)
        sums = torch.empty(triton.cdiv(p.numel(), 1024), device=p.device, dtype=torch.float32)
        squared_error_block_sums[(sums.numel(),)](p, t, sums, p.numel(), BLOCK=1024)
        return (sums.sum() / p.numel()).to(predictions.dtype)
