"""Python inside a kernel defined anew inside forward: the kernel receives a Python function as
a constexpr argument and calls it from its body, where PyTorch computes the output at every
launch under the CPU interpreter. The kernel is no module attribute, so a compile check that
imports the module again never sees it.

source: drkernel issue 11 (judge round 2), "Python inside a kernel" (kernel not at module level)
task: l1_relu
expect: COMPILE_ERROR
error: while it compiles
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)

        def work():
            y.copy_(torch.relu(x))

        @triton.jit
        def relu_kernel(y_ptr, n, WORK: tl.constexpr, BLOCK: tl.constexpr):
            WORK()
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=mask), mask=mask)

        relu_kernel[(triton.cdiv(x.numel(), 1024),)](y, x.numel(), WORK=work, BLOCK=1024)
        return y
