"""Loads and stores go through host-side tensor descriptors (TMA on Hopper): the flattened input
and output are each described by a `triton.tools.tensor_descriptor.TensorDescriptor` (1-D, so
any length meets the 16-byte stride rule) and the kernel calls `desc.load` / `desc.store`.

source: Triton tutorials (persistent matmul, TensorDescriptor.from_tensor)
task: l1_relu
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

BLOCK = 256


@triton.jit
def relu_kernel(x_desc, y_desc, BLOCK: tl.constexpr):
    offset = tl.program_id(0) * BLOCK
    y_desc.store([offset], tl.maximum(x_desc.load([offset]), 0.0))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        x_desc = TensorDescriptor.from_tensor(x.view(-1), [BLOCK])
        y_desc = TensorDescriptor.from_tensor(y.view(-1), [BLOCK])
        relu_kernel[(triton.cdiv(x.numel(), BLOCK),)](x_desc, y_desc, BLOCK=BLOCK)
        return y
