"""Its kernel computes a tenth of the rows of the GELU; PyTorch computes the other nine
tenths into the same output.

source: drkernel issue 11, held-out red team (i11-heldout): a kernel computes a tenth of the rows
task: l1_gelu
expect: CORRECT
coverage_below: 0.05
feedback: of the output's elements
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, (0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows = x.shape[0]
        k = max(1, rows // 10)
        y = torch.empty_like(x)
        n = k * x.shape[1]
        gelu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        y[k:] = torch.nn.functional.gelu(x[k:])
        return y
