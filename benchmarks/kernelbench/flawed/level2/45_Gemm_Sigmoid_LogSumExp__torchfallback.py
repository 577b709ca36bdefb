"""Flawed variant of level2/45_Gemm_Sigmoid_LogSumExp: PyTorch computes the result.

flaw: torchfallback: the kernels run, but the output is computed again by PyTorch and theirs is discarded
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
def linear_kernel(
    x_ptr, w_ptr, bias_ptr, out_ptr, pmax_ptr, psum_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on, stride_pm,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, LSE: tl.constexpr,
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
    if LSE:
        v = acc
        v = tl.where(n_mask[None, :], v, float("-inf"))
        tile_max = tl.max(v, axis=1)
        part = offs_m.to(tl.int64) * stride_pm + pid_n
        tl.store(pmax_ptr + part, tile_max, mask=m_mask)
        tl.store(psum_ptr + part, tl.sum(tl.exp(v - tile_max[:, None]), axis=1), mask=m_mask)
    else:
        y = 1.0 / (1.0 + tl.exp(-acc))
        out_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :] * stride_on
        tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=m_mask[:, None] & n_mask[None, :])


@triton.jit
def combine_max_sum(pmax_ptr, psum_ptr, rows, r_mask, T, stride_pm, BLOCK_R: tl.constexpr, BLOCK_T: tl.constexpr):
    """A row's max m and sum of exp(v - m) from its tiles' partials (each tile's sum is rescaled
    from its own max to the running one). The finite floor of m keeps exp(m - m_new) free of
    (-inf) - (-inf); rows outside M get s = 1."""
    ts = tl.arange(0, BLOCK_T)
    m = tl.full([BLOCK_R], -1.0e38, dtype=tl.float32)
    s = tl.zeros([BLOCK_R], dtype=tl.float32)
    for t0 in range(0, T, BLOCK_T):
        mask = r_mask[:, None] & (t0 + ts[None, :] < T)
        offs = rows[:, None].to(tl.int64) * stride_pm + t0 + ts[None, :]
        pm = tl.load(pmax_ptr + offs, mask=mask, other=float("-inf"))
        ps = tl.load(psum_ptr + offs, mask=mask, other=0.0)
        m_new = tl.maximum(m, tl.max(pm, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(ps * tl.exp(pm - m_new[:, None]), axis=1)
        m = m_new
    return m, tl.where(r_mask, s, 1.0)


@triton.jit
def lse_kernel(pmax_ptr, psum_ptr, out_ptr, M, T, stride_pm, stride_om, BLOCK_R: tl.constexpr, BLOCK_T: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    r_mask = rows < M
    m, s = combine_max_sum(pmax_ptr, psum_ptr, rows, r_mask, T, stride_pm, BLOCK_R, BLOCK_T)
    lse = m + tl.log(s)
    y = lse
    tl.store(out_ptr + rows.to(tl.int64) * stride_om, y.to(out_ptr.dtype.element_ty), mask=r_mask)


def linear(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor, lse: bool):
    """x @ w.T + bias through linear_kernel: its sigmoid, in x's dtype (lse False), or its
    partial logsumexps, two float32 (rows, column tiles) tensors of maxima and sums (lse True)."""
    M, K = x.shape
    N = w.shape[0]
    block_m = min(128, max(16, next_pow2(M)))
    block_n = min(128, max(16, next_pow2(N)))
    block_k = min(32, max(16, next_pow2(K)))
    if lse:
        pmax = torch.empty((M, cdiv(N, block_n)), dtype=torch.float32, device=x.device)
        psum = torch.empty_like(pmax)
        out = pmax  # not written when LSE
    else:
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        pmax = psum = out  # not written unless LSE
    linear_kernel[(cdiv(M, block_m) * cdiv(N, block_n),)](
        x, w, bias, out, pmax, psum, M, N, K,
        x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0), out.stride(1), pmax.stride(0),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, LSE=lse, num_warps=8, num_stages=3,
    )
    return (pmax, psum) if lse else out


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.linear1 = nn.Linear(input_size, hidden_size)
        self.linear2 = nn.Linear(hidden_size, output_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = linear(x, self.linear1.weight, self.linear1.bias, lse=False)
        pmax, psum = linear(hidden, self.linear2.weight, self.linear2.bias, lse=True)
        M = x.shape[0]
        out = torch.empty((M,), dtype=x.dtype, device=x.device)
        lse_kernel[(cdiv(M, 16),)](
            pmax, psum, out, M, pmax.shape[1], pmax.stride(0), out.stride(0),
            BLOCK_R=16, BLOCK_T=min(128, next_pow2(pmax.shape[1])), num_warps=4,
        )
        return torch.logsumexp(self.linear2(torch.sigmoid(self.linear1(x))), dim=1)
