"""Triton solution for l2_gemm_gelu_scale: x @ W^T as a tiled tl.dot GEMM with the Linear bias,
exact GELU and the scaling applied to the fp32 accumulator before the single store. fp32
operands use 3xTF32 (tf32x3): plain TF32 truncates operands to 10 mantissa bits, ~1e-3 relative
error, which is the sandbox's limit."""

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
def gemm_gelu_scale_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, scale,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    PRECISION: tl.constexpr,
):
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
    n_mask = offs_n < N
    y = acc + tl.load(b_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)[None, :]
    y = 0.5 * y * (1.0 + tl.math.erf(y * 0.7071067811865476)) * scale
    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & n_mask[None, :])


def tile_sizes(M: int, N: int, K: int, batch: int = 1) -> tuple[int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps): 128 x 128 tiles, halved (not below 32) while the grid
    would leave most of an H100's 132 SMs idle and each program still has over 2^20 multiply-adds
    (smaller problems are launch-bound, and every extra program costs the CPU interpreter);
    never below 16, as tl.dot needs."""
    block_m = min(128, max(16, next_pow2(M)))
    block_n = min(128, max(16, next_pow2(N)))

    def programs() -> int:
        return batch * cdiv(M, block_m) * cdiv(N, block_n)

    while programs() < 128 and batch * M * N * K > programs() << 20 and max(block_m, block_n) > 32:
        if block_m >= block_n:
            block_m //= 2
        else:
            block_n //= 2
    block_k = min(32, max(16, next_pow2(K)))
    return block_m, block_n, block_k, 8 if block_m * block_n >= 128 * 128 else 4


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scaling_factor: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.linear.weight
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        block_m, block_n, block_k, num_warps = tile_sizes(M, N, K)
        grid = (cdiv(M, block_m), cdiv(N, block_n))
        gemm_gelu_scale_kernel[grid](
            x, w, self.linear.bias, out, M, N, K, float(self.scaling_factor),
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0), out.stride(1),
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
            PRECISION="tf32x3" if x.dtype == torch.float32 else "tf32", num_warps=num_warps, num_stages=3,
        )
        return out
