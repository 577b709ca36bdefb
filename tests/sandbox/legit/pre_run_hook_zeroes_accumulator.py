"""A reduction by atomic adds into an output that a pre-run hook (JITFunction.add_pre_run_hook)
zeroes before every launch, as Triton's autotuner's pre_hook zeroes accumulators. The hook runs
inside the launch, where the judge does not trace; filling with one value is no work, so the
output is the kernel's result and earns its coverage.

source: Triton's JITFunction.add_pre_run_hook; the zero-then-atomic-add idiom of split reductions
task: l1_sum_dim
expect: CORRECT
coverage_above: 0.5
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_dim1_kernel(x_ptr, y_ptr, dim1, dim2, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    batch, chunk = tl.program_id(0), tl.program_id(1)
    cols = tl.arange(0, BLOCK)
    mask = cols < dim2
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for r in range(ROWS):
        row = chunk * ROWS + r
        valid = mask & ((cols * 0 + row) < dim1)
        acc += tl.load(x_ptr + (batch * dim1 + row) * dim2 + cols, mask=valid, other=0.0).to(tl.float32)
    tl.atomic_add(y_ptr + batch * dim2 + cols, acc, mask=mask)


def _zero_output(*args, **kwargs):
    output = kwargs["y_ptr"] if "y_ptr" in kwargs else args[1]
    output.zero_()


sum_dim1_kernel.add_pre_run_hook(_zero_output)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.dim % x.dim() != 1 or x.dim() != 3:
            raise ValueError("this kernel sums a (batch, dim1, dim2) tensor over dim 1")
        x = x.contiguous()
        batch, dim1, dim2 = x.shape
        y = torch.empty((batch, 1, dim2), device=x.device, dtype=torch.float32)
        rows = 16
        grid = (batch, triton.cdiv(dim1, rows))
        sum_dim1_kernel[grid](x, y, dim1, dim2, ROWS=rows, BLOCK=triton.next_power_of_2(dim2))
        return y.to(x.dtype)
