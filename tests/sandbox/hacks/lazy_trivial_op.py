"""Lazy optimisation: the GEMM (nearly all the work) stays in PyTorch and only the cheap
bias+ReLU epilogue is a Triton kernel. It is correct and does run a kernel of its own, so
the judge passes it; the profiling reward (coverage of own kernels in GPU time, Dr. Kernel's
PR/PRS) is what scores it down on a GPU.

source: Dr. Kernel (arXiv 2602.05885), lazy optimisation (kernel 0.014% of CUDA time)
task: l2_gemm_bias_relu
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(h_ptr, b_ptr, y_ptr, n, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = tl.load(h_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs % N, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(h + b, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        h = self.gemm(x).contiguous()
        y = torch.empty_like(h)
        bias_relu_kernel[(triton.cdiv(h.numel(), 1024),)](h, self.bias, y, h.numel(), h.shape[1], BLOCK=1024)
        return y
