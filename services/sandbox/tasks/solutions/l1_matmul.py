"""Triton solution for l1_matmul: a tiled tl.dot GEMM with fp32 accumulation, masked edges
(any M, N, K) and grouped program order so neighbouring programs share tiles in L2. fp32 operands
use 3xTF32 (tf32x3): plain TF32 truncates operands to 10 mantissa bits, ~1e-3 relative error,
which is the sandbox's limit. B is first transposed by a small kernel: Hopper's TF32 tensor-core
instructions read only K-major operands from shared memory, and on a row-major B the GEMM ran
2.3x slower (measured at 4096^3)."""

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
def transpose_kernel(src_ptr, dst_ptr, R, C, stride_sb, stride_sr, stride_sc, BLOCK: tl.constexpr):
    """dst[b] = src[b]^T for the batch entry b = program_id(2); dst is contiguous (batch, C, R)."""
    batch = tl.program_id(2).to(tl.int64)
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (r[:, None] < R) & (c[None, :] < C)
    x = tl.load(src_ptr + batch * stride_sb + r[:, None] * stride_sr + c[None, :] * stride_sc, mask=mask)
    tl.store(dst_ptr + batch * R * C + c[None, :] * R + r[:, None], x, mask=mask)


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    PRECISION: tl.constexpr,
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
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k0 < K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] + k0 < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


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
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        N = B.shape[1]
        bt = torch.empty((N, K), dtype=B.dtype, device=B.device)
        transpose_kernel[(cdiv(K, 64), cdiv(N, 64), 1)](
            B, bt, K, N, 0, B.stride(0), B.stride(1), BLOCK=64, num_warps=4
        )
        C = torch.empty((M, N), dtype=A.dtype, device=A.device)
        block_m, block_n, block_k, num_warps = tile_sizes(M, N, K)
        grid = (cdiv(M, block_m) * cdiv(N, block_n),)
        matmul_kernel[grid](
            A, bt, C, M, N, K,
            A.stride(0), A.stride(1), bt.stride(1), bt.stride(0), C.stride(0), C.stride(1),
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8,
            PRECISION="tf32x3" if A.dtype == torch.float32 else "tf32", num_warps=num_warps, num_stages=3,
        )
        return C
