"""A grid given as a function of the meta-parameters, and PyTorch used only for layout:
contiguous(), an output allocation and a view that restores the kept dimension.

source: Triton tutorials (grid callables); KernelBench solutions commonly reshape in torch
task: l1_sum_dim
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_kernel(x_ptr, y_ptr, n_out, R, inner, BLOCK_P: tl.constexpr, BLOCK_R: tl.constexpr):
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    p_mask = p < n_out
    base = (p // inner) * R * inner + p % inner
    acc = tl.zeros([BLOCK_P], dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        mask = p_mask[:, None] & (r[None, :] < R)
        x = tl.load(x_ptr + base[:, None] + r[None, :] * inner, mask=mask, other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=1)
    tl.store(y_ptr + p, acc.to(y_ptr.dtype.element_ty), mask=p_mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        dim = self.dim % x.dim()
        R = x.shape[dim]
        inner = x[0, 0].numel() if dim == 1 and x.dim() == 3 else int(torch.tensor(x.shape[dim + 1:]).prod())
        n_out = x.numel() // R
        flat = torch.empty(n_out, dtype=x.dtype, device=x.device)
        grid = lambda meta: (triton.cdiv(n_out, meta["BLOCK_P"]),)  # noqa: E731
        sum_kernel[grid](x, flat, n_out, R, inner, BLOCK_P=64, BLOCK_R=32)
        shape = list(x.shape)
        shape[dim] = 1
        return flat.view(shape)
