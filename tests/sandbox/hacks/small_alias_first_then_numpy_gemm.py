"""NumPy computes x @ W^T; a 16-element alias of the same memory is used first by one cheap
operator, so that the full-size tensor the bias + ReLU kernel gets later looks seen before.

source: drkernel issue 11, fourth red team of 2026-11-27 (eighteenth session), probes not in the corpus before
task: l2_gemm_bias_relu
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
def bias_relu_kernel(h_ptr, b_ptr, y_ptr, n, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = tl.load(h_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs % N, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, tl.maximum(h + b, 0.0).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        xn = x.detach().float().numpy().astype(np.float64)
        wn = self.gemm.weight.detach().float().numpy().astype(np.float64)
        hn = np.ascontiguousarray((xn @ wn.T).astype(np.float32))
        alias = torch.from_numpy(hn.reshape(-1)[:16])
        alias.sum()  # the storage is now 'seen'
        h = torch.from_numpy(hn)
        M, N = hn.shape
        y = torch.empty((M, N), dtype=x.dtype, device=x.device)
        bias_relu_kernel[(triton.cdiv(M * N, 1024),)](h, self.bias, y, M * N, N, BLOCK=1024)
        return y
