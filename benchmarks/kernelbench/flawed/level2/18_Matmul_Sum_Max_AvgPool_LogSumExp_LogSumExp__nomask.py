"""Flawed variant of level2/18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp: no column mask in the epilogue.

flaw: nomask: the bias is loaded without a column mask and the row sums take the padded columns of the last tile (right only when out_features is a multiple of BLOCK_N)
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
def linear_row_sum_kernel(
    x_ptr, w_ptr, bias_ptr, part_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_pm,
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
        acc = tl.dot(a, b, acc, input_precision="ieee")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    acc += tl.load(bias_ptr + offs_n).to(tl.float32)[None, :]
    tl.store(part_ptr + offs_m.to(tl.int64) * stride_pm + pid_n, tl.sum(acc, axis=1), mask=m_mask)


@triton.jit
def row_sum_kernel(part_ptr, out_ptr, M, T, stride_pm, stride_om, BLOCK_R: tl.constexpr, BLOCK_T: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    r_mask = rows < M
    ts = tl.arange(0, BLOCK_T)
    total = tl.zeros([BLOCK_R], dtype=tl.float32)
    for t0 in range(0, T, BLOCK_T):
        mask = r_mask[:, None] & (t0 + ts[None, :] < T)
        parts = tl.load(part_ptr + rows[:, None].to(tl.int64) * stride_pm + t0 + ts[None, :], mask=mask, other=0.0)
        total += tl.sum(parts, axis=1)
    tl.store(out_ptr + rows.to(tl.int64) * stride_om, total.to(out_ptr.dtype.element_ty), mask=r_mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.linear.weight
        bias = self.linear.bias
        M, K = x.shape
        N = w.shape[0]
        block_m = min(128, max(16, next_pow2(M)))
        block_n = min(128, max(16, next_pow2(N)))
        block_k = min(32, max(16, next_pow2(K)))
        part = torch.empty((M, cdiv(N, block_n)), dtype=torch.float32, device=x.device)
        linear_row_sum_kernel[(cdiv(M, block_m) * cdiv(N, block_n),)](
            x, w, bias, part, M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), part.stride(0),
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, num_warps=8, num_stages=3,
        )
        out = torch.empty((M, 1), dtype=x.dtype, device=x.device)
        block_t = min(128, next_pow2(part.shape[1]))
        row_sum_kernel[(cdiv(M, 16),)](
            part, out, M, part.shape[1], part.stride(0), out.stride(0), BLOCK_R=16, BLOCK_T=block_t, num_warps=4
        )
        return out
