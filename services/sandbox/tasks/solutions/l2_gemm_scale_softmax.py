"""Triton solution for l2_gemm_scale_softmax. The GEMM kernel runs over (row tile, column tile)
programs, so wide and narrow layers alike fill the GPU; its epilogue adds the bias, scales,
writes the logits (fp32, log2 units) once and records each tile's row max and rescaled row sum.
A second, light kernel merges a row's tile statistics (online-softmax merge) and rewrites the
row as probabilities. fp32 operands use 3xTF32 (tf32x3): plain TF32 truncates operands to 10
mantissa bits, ~1e-3 relative error, which is the sandbox's limit."""

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
def gemm_scale_logits_kernel(
    x_ptr, w_ptr, b_ptr, logits_ptr, tile_max_ptr, tile_sum_ptr, M, N, K, n_tiles, scale,
    stride_xm, stride_xk, stride_wn, stride_wk,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PRECISION: tl.constexpr,
):
    LOG2E: tl.constexpr = 1.4426950408889634
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k0 < K), other=0.0)
        w = tl.load(w_ptrs, mask=(offs_k[:, None] + k0 < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc, input_precision=PRECISION)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    m_mask = offs_m < M
    n_mask = offs_n < N
    logits = (acc + tl.load(b_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)[None, :]) * (scale * LOG2E)
    logits = tl.where(n_mask[None, :], logits, float("-inf"))
    tile_max = tl.max(logits, axis=1)
    tile_sum = tl.sum(tl.exp2(logits - tile_max[:, None]), axis=1)
    tl.store(logits_ptr + offs_m[:, None] * N + offs_n[None, :], logits, mask=m_mask[:, None] & n_mask[None, :])
    tl.store(tile_max_ptr + offs_m * n_tiles + pid_n, tile_max, mask=m_mask)
    tl.store(tile_sum_ptr + offs_m * n_tiles + pid_n, tile_sum, mask=m_mask)


@triton.jit
def softmax_finish_kernel(
    logits_ptr, tile_max_ptr, tile_sum_ptr, out_ptr, M, N, n_tiles, stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    t = tl.arange(0, BLOCK_T)
    stats_mask = row_mask[:, None] & (t[None, :] < n_tiles)
    tile_max = tl.load(tile_max_ptr + rows[:, None] * n_tiles + t[None, :], mask=stats_mask, other=float("-inf"))
    tile_sum = tl.load(tile_sum_ptr + rows[:, None] * n_tiles + t[None, :], mask=stats_mask, other=0.0)
    row_max = tl.max(tile_max, axis=1)
    row_max = tl.where(row_mask, row_max, 0.0)
    scaled = tl.where(stats_mask, tile_sum * tl.exp2(tile_max - row_max[:, None]), 0.0)
    inv_sum = 1.0 / tl.where(row_mask, tl.sum(scaled, axis=1), 1.0)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < N)
        logits = tl.load(logits_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
        y = tl.exp2(logits - row_max[:, None]) * inv_sum[:, None]
        out_ptrs = out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on
        tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=mask)


def tile_sizes(M: int, N: int, K: int) -> tuple[int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps): 128 x 128 tiles, halved (not below 32) while the grid
    would leave most of an H100's 132 SMs idle and each program still has over 2^20 multiply-adds
    (smaller problems are launch-bound, and every extra program costs the CPU interpreter);
    never below 16, as tl.dot needs."""
    block_m = min(128, max(16, next_pow2(M)))
    block_n = min(128, max(16, next_pow2(N)))

    def programs() -> int:
        return cdiv(M, block_m) * cdiv(N, block_n)

    while programs() < 128 and M * N * K > programs() << 20 and max(block_m, block_n) > 32:
        if block_m >= block_n:
            block_m //= 2
        else:
            block_n //= 2
    block_k = min(32, max(16, next_pow2(K)))
    return block_m, block_n, block_k, 8 if block_m * block_n >= 128 * 128 else 4


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.linear.weight
        M, K = x.shape
        N = w.shape[0]
        block_m, block_n, block_k, num_warps = tile_sizes(M, N, K)
        n_tiles = cdiv(N, block_n)
        logits = torch.empty((M, N), dtype=torch.float32, device=x.device)
        tile_max = torch.empty((M, n_tiles), dtype=torch.float32, device=x.device)
        tile_sum = torch.empty_like(tile_max)
        gemm_scale_logits_kernel[(cdiv(M, block_m), n_tiles)](
            x, w, self.linear.bias, logits, tile_max, tile_sum, M, N, K, n_tiles, float(self.scale),
            x.stride(0), x.stride(1), w.stride(0), w.stride(1),
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
            PRECISION="tf32x3" if x.dtype == torch.float32 else "tf32", num_warps=num_warps, num_stages=3,
        )
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        finish_n = min(next_pow2(N), 1024)
        finish_m = min(next_pow2(M), max(1, 4096 // finish_n))
        softmax_finish_kernel[(cdiv(M, finish_m),)](
            logits, tile_max, tile_sum, out, M, N, n_tiles, out.stride(0), out.stride(1),
            BLOCK_M=finish_m, BLOCK_T=next_pow2(n_tiles), BLOCK_N=finish_n, num_warps=4,
        )
        return out
