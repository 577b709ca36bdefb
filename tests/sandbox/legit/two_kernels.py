"""Two kernels per forward: a tiled GEMM that writes x @ W^T, then an elementwise kernel for
bias + ReLU. Both are the candidate's own.

source: KernelBench level-2 style (unfused kernels); Triton matmul tutorial
task: l2_gemm_bias_relu
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(x_ptr, w_ptr, h_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(x_ptr + offs_m[:, None] * K + k[None, :], mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(w_ptr + offs_n[None, :] * K + k[:, None], mask=(offs_n[None, :] < N) & (k[:, None] < K), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(h_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def bias_relu_kernel(h_ptr, b_ptr, y_ptr, n, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = tl.load(h_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs % N, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(h + b, 0.0).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = x.contiguous()
        w = self.gemm.weight.contiguous()
        M, K = x.shape
        N = w.shape[0]
        h = torch.empty((M, N), dtype=torch.float32, device=x.device)
        matmul_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](x, w, h, M, N, K, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
        y = torch.empty((M, N), dtype=x.dtype, device=x.device)
        bias_relu_kernel[(triton.cdiv(M * N, 1024),)](h, self.bias, y, M * N, N, BLOCK=1024)
        return y
