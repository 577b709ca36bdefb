"""The honest twin of persisting_l2.py: the same matvec kernel without the L2 carve-out.

source: persisting_l2.py (baseline for its "no gain" check)
task: tasks/matvec_large.py
timing: on
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matvec_kernel(x_ptr, w_ptr, y_ptr, B, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    b = tl.program_id(0)
    n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + b * K + k, mask=k < K, other=0.0)
        w = tl.load(w_ptr + n[:, None] * K + k[None, :], mask=(n[:, None] < N) & (k[None, :] < K), other=0.0)
        acc += tl.sum(w * x[None, :], axis=1)
    tl.store(y_ptr + b * N + n, acc, mask=n < N)


class ModelNew(nn.Module):
    def __init__(self, rows, cols):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(rows, cols) / cols**0.5)

    def forward(self, x):
        B, K = x.shape
        N = self.weight.shape[0]
        y = torch.empty(B, N, dtype=x.dtype, device=x.device)
        matvec_kernel[(B, triton.cdiv(N, 64))](x, self.weight, y, B, N, K, BLOCK_N=64, BLOCK_K=128)
        return y
