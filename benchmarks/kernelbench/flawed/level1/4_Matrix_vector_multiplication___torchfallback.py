"""Flawed variant of level1/4_Matrix_vector_multiplication_: PyTorch computes the result.

flaw: torchfallback: the output is torch.matmul(A, B); the kernel only fills a scratch buffer
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
def matvec_kernel(a_ptr, b_ptr, c_ptr, M, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    cols = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + cols
        k_mask = k < K
        b = tl.load(b_ptr + k.to(tl.int64) * stride_bk, mask=k_mask, other=0.0).to(tl.float32)
        a = tl.load(
            a_ptr + rows[:, None].to(tl.int64) * stride_am + k[None, :],
            mask=row_mask[:, None] & k_mask[None, :], other=0.0,
        ).to(tl.float32)
        acc += a * b[None, :]
    tl.store(c_ptr + rows.to(tl.int64) * stride_cm, tl.sum(acc, axis=1).to(c_ptr.dtype.element_ty), mask=row_mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        A = A.contiguous()
        M, K = A.shape
        out = torch.empty((M, B.shape[1]), dtype=A.dtype, device=A.device)
        block_m = min(4, next_pow2(M))
        block_k = min(2048, next_pow2(K))
        for j in range(B.shape[1]):
            matvec_kernel[(cdiv(M, block_m),)](
                A, B[:, j], out[:, j], M, K, A.stride(0), B.stride(0), out.stride(0),
                BLOCK_M=block_m, BLOCK_K=block_k, num_warps=8,
            )
        return torch.matmul(A, B)
