"""A row softmax in two passes over its input, each program loading its row twice (once for the
max and the sum, once more to normalise): a real second read that the profile charges once per
launch, as it charges any repeated read, and an honest kernel that owns the whole forward.

source: drkernel issue 11 (look-alike of reread_64x_lazy_gemm: a kernel that legitimately loads its input twice)
task: l1_softmax
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    peak = tl.max(x, axis=0)
    total = tl.sum(tl.exp(x - peak), axis=0)
    again = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    out = tl.exp(again - peak) / total
    tl.store(y_ptr + row * cols + offs, out.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        softmax_kernel[(rows,)](x, y, cols, BLOCK=triton.next_power_of_2(cols))
        return y
