"""Flawed variant of level2/53_Gemm_Scaling_Hardtanh_GELU: bfloat16 GEMM operands.

flaw: lowprec: x and W are rounded to bfloat16 before the products (the accumulator stays float32)
kernelbench: fail
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
def gelu_f32(x):
    """Exact (erf) GELU, as torch.nn.functional.gelu's default."""
    return 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))


@triton.jit
def linear_epilogue_kernel(
    x_ptr, w_ptr, bias_ptr, out_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on, scaling_factor, hardtanh_min, hardtanh_max,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
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
        a = tl.load(x_ptrs, mask=m_mask[:, None] & (offs_k[None, :] + k0 < K), other=0.0)
        b = tl.load(w_ptrs, mask=(offs_k[:, None] + k0 < K) & n_mask[None, :], other=0.0)
        # bfloat16 operands, as a bf16 tensor-core GEMM would take them
        a = a.to(tl.bfloat16).to(tl.float32)
        b = b.to(tl.bfloat16).to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    acc += tl.load(bias_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)[None, :]
    z = tl.minimum(tl.maximum(acc * scaling_factor, hardtanh_min), hardtanh_max)
    y = gelu_f32(z)
    out_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=m_mask[:, None] & n_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor, hardtanh_min, hardtanh_max):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor
        self.hardtanh_min = hardtanh_min
        self.hardtanh_max = hardtanh_max

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
            x, w, bias, out, M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0), out.stride(1), float(self.scaling_factor), float(self.hardtanh_min), float(self.hardtanh_max),
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, num_warps=8, num_stages=3,
        )
        return out
