"""Flawed variant of level1/1_Square_matrix_multiplication_: bfloat16 operands and accumulator.

flaw: lowprec: the GEMM runs on bfloat16 operands and keeps its running sum in bfloat16
kernelbench: fail
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def cdiv(a: int, b: int) -> int:
    """ceil(a / b). Host-side sizes use these plain-Python twins of triton.cdiv and
    triton.next_power_of_2: those are constexpr functions that cost microseconds per host call."""
    return -(-a // b)


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (n >= 1)."""
    return 1 << (n - 1).bit_length()


@triton.jit
def split_tf32_kernel(
    x_ptr, hi_ptr, lo_ptr, R, C, stride_xr, stride_xc, stride_or, stride_oc,
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """hi = x rounded to TF32 (nearest), lo = x - hi (exact); written through the out strides."""
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (r[:, None] < R) & (c[None, :] < C)
    x = tl.load(x_ptr + r[:, None].to(tl.int64) * stride_xr + c[None, :] * stride_xc, mask=mask, other=0.0)
    x = x.to(tl.float32)
    bits = x.to(tl.uint32, bitcast=True)
    hi = ((bits + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)
    out = r[:, None].to(tl.int64) * stride_or + c[None, :] * stride_oc
    tl.store(hi_ptr + out, hi, mask=mask)
    tl.store(lo_ptr + out, x - hi, mask=mask)


@triton.jit
def matmul_3xtf32_kernel(
    a_hi_ptr, a_lo_ptr, bt_hi_ptr, bt_lo_ptr, c_ptr, M, N, K, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    """C = A @ B from the split operands: A parts are (M, K), B parts (N, K), all row-major."""
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
    a_off = offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
    b_off = offs_n[None, :].to(tl.int64) * K + offs_k[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a_mask = (offs_m[:, None] < M) & (offs_k[None, :] + k0 < K)
        b_mask = (offs_k[:, None] + k0 < K) & (offs_n[None, :] < N)
        a_hi = tl.load(a_hi_ptr + a_off, mask=a_mask, other=0.0)
        a_lo = tl.load(a_lo_ptr + a_off, mask=a_mask, other=0.0)
        b_hi = tl.load(bt_hi_ptr + b_off, mask=b_mask, other=0.0)
        b_lo = tl.load(bt_lo_ptr + b_off, mask=b_mask, other=0.0)
        a_bf = a_hi.to(tl.bfloat16).to(tl.float32)
        b_bf = b_hi.to(tl.bfloat16).to(tl.float32)
        acc = (acc + tl.dot(a_bf, b_bf, input_precision="ieee")).to(tl.bfloat16).to(tl.float32)
        a_off += BLOCK_K
        b_off += BLOCK_K
    c_ptrs = c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        N = B.shape[1]
        f32 = dict(dtype=torch.float32, device=A.device)
        a_hi, a_lo = torch.empty((M, K), **f32), torch.empty((M, K), **f32)
        bt_hi, bt_lo = torch.empty((N, K), **f32), torch.empty((N, K), **f32)
        block_r = min(64, next_pow2(max(M, K, N)))
        split_tf32_kernel[(cdiv(M, block_r), cdiv(K, block_r))](
            A, a_hi, a_lo, M, K, A.stride(0), A.stride(1), K, 1, BLOCK_R=block_r, BLOCK_C=block_r, num_warps=4
        )
        split_tf32_kernel[(cdiv(K, block_r), cdiv(N, block_r))](
            B, bt_hi, bt_lo, K, N, B.stride(0), B.stride(1), 1, K, BLOCK_R=block_r, BLOCK_C=block_r, num_warps=4
        )
        C = torch.empty((M, N), dtype=A.dtype, device=A.device)
        block_m = min(128, max(16, next_pow2(M)))
        block_n = min(128, max(16, next_pow2(N)))
        block_k = min(32, max(16, next_pow2(K)))
        matmul_3xtf32_kernel[(cdiv(M, block_m) * cdiv(N, block_n),)](
            a_hi, a_lo, bt_hi, bt_lo, C, M, N, K, C.stride(0), C.stride(1),
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, num_warps=8, num_stages=3,
        )
        return C
