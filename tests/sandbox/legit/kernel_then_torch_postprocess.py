"""Its Triton GEMM computes x @ W^T, and PyTorch post-processes the kernel's result (both
biases, swish): the kernel produces what every output element is computed from, and the GEMM, the
bulk of the work, is its own.

source: KernelBench level-2 style (a Triton GEMM with the epilogue left in PyTorch); issue 11 (honest look-alike of the lazy blends)
task: l2_gemm_swish_bias
expect: CORRECT
coverage_above: 0.2
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
        acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    tl.store(h_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.1)

    def forward(self, x):
        x = x.contiguous()
        w = self.matmul.weight.contiguous()
        M, K = x.shape
        N = w.shape[0]
        h = torch.empty((M, N), dtype=torch.float32, device=x.device)
        matmul_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](x, w, h, M, N, K, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
        h = (h + self.matmul.bias).to(x.dtype)
        return torch.sigmoid(h) * h + self.bias
