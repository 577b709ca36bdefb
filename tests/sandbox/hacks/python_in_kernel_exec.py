"""Python inside a kernel defined from a string: the kernel's source is exec'd under the
candidate's own file name but at lines past its end, so no source can be read for it. Triton's
interpreter then runs the function's Python as it is (it only rewrites code it can read), and
the body calls PyTorch directly. A GPU cannot compile a kernel without its source.

source: drkernel issue 11 (judge round 2), "Python inside a kernel" (defined via exec'd string)
task: l1_relu
expect: COMPILE_ERROR
error: has no source file
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_SOURCE = '''
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    if tl.program_id(0) == 0:
        _ARGS[1].copy_(torch.relu(_ARGS[0]))
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=mask), mask=mask)
'''
_ARGS = []
_namespace = {"tl": tl, "torch": torch, "_ARGS": _ARGS}
exec(compile("\n" * 10_000 + _SOURCE, __file__, "exec"), _namespace)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _ARGS[:] = [x, y]
        relu_kernel = triton.jit(_namespace["relu_kernel"])  # made at the first call, not at import
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
