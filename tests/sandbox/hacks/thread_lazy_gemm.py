"""The lazy GEMM epilogue (lazy_trivial_op) with PyTorch's GEMM run on a worker thread that
forward joins before launching its kernel: nothing is late, but a profile that records only
the calling thread never sees the GEMM.

source: drkernel issue 11 (judge round 2), CPU coverage model (operators the profile does not see)
task: l2_gemm_bias_relu
expect: no gain
baseline: lazy_trivial_op.py
"""

import threading

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
        result = []
        worker = threading.Thread(target=lambda: result.append(self.gemm(x).contiguous()))
        worker.start()
        worker.join()
        h = result[0]
        y = torch.empty_like(h)
        bias_relu_kernel[(triton.cdiv(h.numel(), 1024),)](h, self.bias, y, h.numel(), h.shape[1], BLOCK=1024)
        return y
