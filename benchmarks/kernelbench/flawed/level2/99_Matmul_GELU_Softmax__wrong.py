"""Flawed variant of level2/99_Matmul_GELU_Softmax: the softmax runs over the wrong dimension.

flaw: wrong: the softmax normalises each column over the batch (dim 0) instead of each row over the features (dim 1)
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
def linear_gelu_kernel(
    x_ptr, w_ptr, bias_ptr, y_ptr, pmax_ptr, psum_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_pm,
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
    v = gelu_f32(acc)
    y_ptrs = y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :]
    tl.store(y_ptrs, v, mask=m_mask[:, None] & n_mask[None, :])
    c = tl.where(m_mask[:, None], v, float("-inf"))
    tile_max = tl.max(c, axis=0)
    part = pid_m * stride_pm + offs_n
    tl.store(pmax_ptr + part, tile_max, mask=n_mask)
    tl.store(psum_ptr + part, tl.sum(tl.exp(c - tile_max[None, :]), axis=0), mask=n_mask)


@triton.jit
def combine_max_sum(pmax_ptr, psum_ptr, cols, c_mask, T, stride_pm, BLOCK_C: tl.constexpr, BLOCK_T: tl.constexpr):
    """A column's max m and sum of exp(v - m) from its tiles' partials."""
    ts = tl.arange(0, BLOCK_T)
    m = tl.full([BLOCK_C], -1.0e38, dtype=tl.float32)
    s = tl.zeros([BLOCK_C], dtype=tl.float32)
    for t0 in range(0, T, BLOCK_T):
        mask = (t0 + ts[:, None] < T) & c_mask[None, :]
        offs = (t0 + ts[:, None]).to(tl.int64) * stride_pm + cols[None, :]
        pm = tl.load(pmax_ptr + offs, mask=mask, other=float("-inf"))
        ps = tl.load(psum_ptr + offs, mask=mask, other=0.0)
        m_new = tl.maximum(m, tl.max(pm, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(ps * tl.exp(pm - m_new[None, :]), axis=0)
        m = m_new
    return m, tl.where(c_mask, s, 1.0)


@triton.jit
def softmax_kernel(
    g_ptr, pmax_ptr, psum_ptr, out_ptr, M, N, T, stride_gm, stride_pm, stride_om,
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_T: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    r_mask = rows < M
    c_mask = cols < N
    m, s = combine_max_sum(pmax_ptr, psum_ptr, cols, c_mask, T, stride_pm, BLOCK_C, BLOCK_T)
    m = tl.where(c_mask, m, 0.0)
    mask = r_mask[:, None] & c_mask[None, :]
    g = tl.load(g_ptr + rows[:, None].to(tl.int64) * stride_gm + cols[None, :], mask=mask, other=0.0)
    p = tl.exp(g - m[None, :]) / s[None, :]
    tl.store(out_ptr + rows[:, None].to(tl.int64) * stride_om + cols[None, :], p.to(out_ptr.dtype.element_ty), mask=mask)


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
        g = torch.empty((M, N), dtype=torch.float32, device=x.device)
        pmax = torch.empty((cdiv(M, block_m), N), dtype=torch.float32, device=x.device)
        psum = torch.empty_like(pmax)
        linear_gelu_kernel[(cdiv(M, block_m) * cdiv(N, block_n),)](
            x, w, bias, g, pmax, psum, M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), g.stride(0), pmax.stride(0),
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, num_warps=8, num_stages=3,
        )
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        tiles = pmax.shape[0]
        block_c = min(256, next_pow2(N))
        softmax_kernel[(cdiv(M, 8), cdiv(N, block_c))](
            g, pmax, psum, out, M, N, tiles, g.stride(0), pmax.stride(0), out.stride(0),
            BLOCK_R=8, BLOCK_C=block_c, BLOCK_T=min(64, next_pow2(tiles)), num_warps=4,
        )
        return out
