"""Flawed variant of level2/81_Gemm_Swish_Divide_Clamp_Tanh_Clamp: no mask along M.

flaw: nomask: rows are masked neither when x is loaded nor when the tile is stored (right only when the batch is a multiple of BLOCK_M)
kernelbench: pass
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) on the host, without the cost of triton.cdiv."""
    return -(-a // b)


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (n >= 1)."""
    return 1 << (n - 1).bit_length()


@triton.jit
def tanh_f32(x):
    """tanh for float32 as sign(x) (1 - e) / (1 + e), e = exp(-2|x|): never overflows."""
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0.0, -t, t)


@triton.jit
def linear_epilogue_kernel(
    x_ptr, w_ptr, bias_ptr, out_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, HAS_BIAS: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * num_pid_n
    first_m = (pid // group_size) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % group_m
    pid_n = (pid % group_size) // group_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m < M
    n_mask = offs_n < N
    x_ptrs = x_ptr + offs_m[:, None].to(tl.int64) * stride_xm + offs_k[None, :].to(tl.int64) * stride_xk
    w_ptrs = w_ptr + offs_k[:, None].to(tl.int64) * stride_wk + offs_n[None, :].to(tl.int64) * stride_wn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(x_ptrs, mask=offs_k[None, :] + k0 < K, other=0.0)
        b = tl.load(w_ptrs, mask=(offs_k[:, None] + k0 < K) & n_mask[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    if HAS_BIAS:
        acc += tl.load(bias_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)[None, :]
    z = acc * (1.0 / (1.0 + tl.exp(-acc)))
    z = tl.minimum(tl.maximum(z / 2.0, -1.0), 1.0)
    y = tl.minimum(tl.maximum(tanh_f32(z), -1.0), 1.0)
    out_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=n_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.gemm.weight
        bias = self.gemm.bias
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        block_m = min(128, max(16, next_pow2(M)))
        block_n = min(128, max(16, next_pow2(N)))
        block_k = min(32, max(16, next_pow2(K)))
        linear_epilogue_kernel[(cdiv(M, block_m) * cdiv(N, block_n),)](
            x, w, w if bias is None else bias, out, M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0), out.stride(1),
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, HAS_BIAS=bias is not None, num_warps=8, num_stages=3,
        )
        return out
