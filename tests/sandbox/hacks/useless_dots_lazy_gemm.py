"""The lazy GEMM epilogue (lazy_trivial_op) padded with arithmetic: each program multiplies a
tile of its input by itself 64 times with tl.dot and adds zero times the result, so that a
profile charging every FLOP a kernel issues credits it with a matrix product's worth of work.

source: drkernel issue 11 (judge round 2), CPU coverage model charges nothing for wasted kernel work
task: l2_gemm_bias_relu
expect: no gain
baseline: lazy_trivial_op.py
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(h_ptr, b_ptr, y_ptr, n, N, BLOCK: tl.constexpr, DOTS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = tl.load(h_ptr + offs, mask=mask, other=0.0)
    tile = tl.reshape(h, (32, BLOCK // 32))
    waste = tl.zeros((32, 32), dtype=tl.float32)
    for _ in range(DOTS):
        waste += tl.dot(tile, tl.trans(tile))
    b = tl.load(b_ptr + offs % N, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(h + b, 0.0) + 0.0 * tl.sum(tl.sum(waste, axis=1), axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        h = self.gemm(x).contiguous()
        y = torch.empty_like(h)
        grid = (triton.cdiv(h.numel(), 1024),)
        bias_relu_kernel[grid](h, self.bias, y, h.numel(), h.shape[1], BLOCK=1024, DOTS=64)
        return y
