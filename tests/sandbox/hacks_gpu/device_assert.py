"""A device-side assertion that fails in every program (kernel compiled with debug=True).

source: issue 3 fault list (GPU: device-side assert)
task: l1_relu
expect: RUNTIME_ERROR
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit(debug=True)
def assert_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.device_assert(x != x, "values must be NaN")
    tl.store(y_ptr + offs, x, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        assert_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        torch.cuda.synchronize()
        return y
