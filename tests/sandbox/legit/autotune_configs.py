"""@triton.autotune over several tile configs (and warp counts) for a GEMM with a fused bias and
ReLU, keyed on the problem sizes, as in the matmul tutorial: on a GPU the autotuner benchmarks
them; without one a config must still be chosen and run.

source: Triton tutorials (03-matrix-multiplication, @triton.autotune)
task: l2_gemm_bias_relu
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=8, num_stages=3),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def gemm_bias_relu_kernel(
    x_ptr, w_ptr, bias_ptr, out_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(x_ptr + offs_m[:, None] * stride_xm + (k0 + offs_k)[None, :] * stride_xk,
                    mask=(offs_m[:, None] < M) & (k0 + offs_k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + (k0 + offs_k)[:, None] * stride_wk + offs_n[None, :] * stride_wn,
                    mask=(k0 + offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc, input_precision="tf32x3")
    n_mask = offs_n < N
    bias = tl.load(bias_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)
    y = tl.maximum(acc + bias[None, :], 0.0)
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on,
             y.to(out_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & n_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, bias_shape: tuple):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        w = self.gemm.weight
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))
        gemm_bias_relu_kernel[grid](
            x, w, self.bias, out, M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0), out.stride(1),
        )
        return out
