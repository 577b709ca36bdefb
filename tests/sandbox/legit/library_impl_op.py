"""A GEMM epilogue (bias and ReLU) kernel behind an operator defined with
`torch.library.Library` and given Python implementations for CPU and CUDA (the API older than
`custom_op`, still common); PyTorch's matmul runs inside the operator too, as in a fused
epilogue after a PyTorch GEMM. The judge traces inside such an operator: the epilogue is
the kernel's work, the GEMM PyTorch's (coverage about 0.23 on CPU, its share of device time).

source: PyTorch documentation (torch.library.Library.define and impl)
task: l2_gemm_bias_relu
expect: CORRECT
coverage_above: 0.1
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_library = torch.library.Library("candidate_legit_epilogue", "DEF")
_library.define("gemm_bias_relu(Tensor x, Tensor weight, Tensor bias) -> Tensor")


@triton.jit
def bias_relu_kernel(y_ptr, bias_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(bias_ptr + offs % cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, tl.maximum(y + b, 0.0).to(out_ptr.dtype.element_ty), mask=mask)


def _gemm_bias_relu(x, weight, bias):
    y = (x @ weight.t()).contiguous()
    out = torch.empty_like(y)
    n = y.numel()
    bias_relu_kernel[(triton.cdiv(n, 1024),)](y, bias.contiguous(), out, n, y.shape[-1], BLOCK=1024)
    return out


_library.impl("gemm_bias_relu", _gemm_bias_relu, "CPU")
_library.impl("gemm_bias_relu", _gemm_bias_relu, "CUDA")


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return torch.ops.candidate_legit_epilogue.gemm_bias_relu(x, self.gemm.weight, self.bias)
