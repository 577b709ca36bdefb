"""A kernel computes only each row's log-sum-exp into a small side tensor; PyTorch finishes
with x - lse. The kernel's small result is needed by the whole output, so the knock-out must
not call this a hack; the elementwise epilogue left in PyTorch is what coverage shows.

source: common partial-kernel pattern in model outputs (statistics in Triton, epilogue in PyTorch); Dr. Kernel lazy optimisation
task: l1_log_softmax
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_logsumexp_kernel(x_ptr, lse_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=-float("inf"))
    peak = tl.max(x, axis=0)
    total = tl.sum(tl.exp(x - peak), axis=0)
    tl.store(lse_ptr + row, peak + tl.log(total))


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        lse = torch.empty(x.shape[0], 1, device=x.device, dtype=torch.float32)
        row_logsumexp_kernel[(x.shape[0],)](x, lse, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return (x - lse).to(x.dtype)
