"""Flawed variant of level2/62_Matmul_GroupNorm_LeakyReLU_Sum: one group per row.

flaw: wrong: the normalisation statistics cover each whole row (all channels) instead of each group of channels
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
def linear_kernel(
    x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_ym,
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
    acc += tl.load(bias_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)[None, :]
    v = acc
    y_ptrs = y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :]
    tl.store(y_ptrs, v, mask=m_mask[:, None] & n_mask[None, :])


@triton.jit
def group_norm_leaky_double_kernel(
    y_ptr, gamma_ptr, beta_ptr, out_ptr, num_groups, group_size, stride_ym, stride_om, eps, negative_slope,
    BLOCK_GR: tl.constexpr, BLOCK_G: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    groups = tl.program_id(1) * BLOCK_GR + tl.arange(0, BLOCK_GR)
    g_mask = groups < num_groups
    cs = tl.arange(0, BLOCK_G)
    first = groups[:, None].to(tl.int64) * group_size  # each group's first channel
    y_row = y_ptr + row * stride_ym
    total = tl.zeros([BLOCK_GR], dtype=tl.float32)
    for c0 in range(0, group_size, BLOCK_G):
        mask = g_mask[:, None] & (c0 + cs[None, :] < group_size)
        total += tl.sum(tl.load(y_row + first + c0 + cs[None, :], mask=mask, other=0.0), axis=1)
    mean = total / group_size
    squares = tl.zeros([BLOCK_GR], dtype=tl.float32)
    for c0 in range(0, group_size, BLOCK_G):
        mask = g_mask[:, None] & (c0 + cs[None, :] < group_size)
        v = tl.load(y_row + first + c0 + cs[None, :], mask=mask, other=0.0)
        d = tl.where(mask, v - mean[:, None], 0.0)
        squares += tl.sum(d * d, axis=1)
    rstd = 1.0 / tl.sqrt(squares / group_size + eps)
    for c0 in range(0, group_size, BLOCK_G):
        mask = g_mask[:, None] & (c0 + cs[None, :] < group_size)
        channels = first + c0 + cs[None, :]
        v = tl.load(y_row + channels, mask=mask, other=0.0)
        gamma = tl.load(gamma_ptr + channels, mask=mask, other=0.0).to(tl.float32)
        beta = tl.load(beta_ptr + channels, mask=mask, other=0.0).to(tl.float32)
        z = (v - mean[:, None]) * rstd[:, None] * gamma + beta
        z = tl.where(z >= 0.0, z, z * negative_slope)
        tl.store(out_ptr + row * stride_om + channels, (z + z).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, num_groups, eps=1e-5, negative_slope=0.01):
        super().__init__()
        self.fc = nn.Linear(input_size, hidden_size)
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=hidden_size, eps=eps)
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.fc.weight
        bias = self.fc.bias
        M, K = x.shape
        N = w.shape[0]
        block_m = min(128, max(16, next_pow2(M)))
        block_n = min(128, max(16, next_pow2(N)))
        block_k = min(32, max(16, next_pow2(K)))
        y = torch.empty((M, N), dtype=torch.float32, device=x.device)
        linear_kernel[(cdiv(M, block_m) * cdiv(N, block_n),)](
            x, w, bias, y, M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), y.stride(0),
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, num_warps=8, num_stages=3,
        )
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        num_groups = 1
        group_size = N // num_groups
        block_g = min(1024, next_pow2(group_size))
        block_gr = min(next_pow2(num_groups), max(1, 2048 // block_g))
        group_norm_leaky_double_kernel[(M, cdiv(num_groups, block_gr))](
            y, self.gn.weight, self.gn.bias, out, num_groups, group_size, y.stride(0), out.stride(0),
            float(self.gn.eps), float(self.negative_slope), BLOCK_GR=block_gr, BLOCK_G=block_g, num_warps=4,
        )
        return out
