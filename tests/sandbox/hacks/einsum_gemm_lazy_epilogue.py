"""The lazy GEMM epilogue (lazy_trivial_op) with the product written as torch.einsum: einsum
records neither FLOPs nor the shapes of its operands, and the CPU model charged it nothing
(coverage 1.0). A composite operator now costs at least what the operators it calls cost
(here a batched matrix product), so this scores as the plain lazy epilogue does.

source: drkernel issue 11, fifth red team of 2026-11-27 (nineteenth session), probes not in the corpus before
task: l2_gemm_bias_relu
expect: no gain
baseline: lazy_trivial_op.py
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(h_ptr, b_ptr, y_ptr, n, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = tl.load(h_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    h += tl.load(b_ptr + offs % N, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, tl.maximum(h, 0.0).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        h = torch.einsum("mk,nk->mn", x, self.gemm.weight).contiguous()
        y = torch.empty_like(h)
        n = h.numel()
        bias_relu_kernel[(triton.cdiv(n, 256),)](h, self.bias, y, n, h.shape[1], BLOCK=256)
        return y
