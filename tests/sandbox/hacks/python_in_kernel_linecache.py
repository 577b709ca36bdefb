"""Python inside a kernel whose source is swapped after it ran: the kernel is exec'd under the
candidate's own file name at lines past its end, whose text the module registers in linecache;
the interpreter rewrites it from a body that calls PyTorch, and right after the launch the
registered text becomes an honest ReLU body, which is what a compile check reading the source
afterwards would compile.

source: drkernel issue 11 (judge round 2), "Python inside a kernel" (source read twice)
task: l1_relu
expect: COMPILE_ERROR
error: _torch_relu
"""

import linecache

import torch
import torch.nn as nn
import triton
import triton.language as tl

_NAME = __file__
_FILE = open(__file__).read().splitlines(keepends=True)
_AT = 10_000
_RAN = '''def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    _torch_relu()
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=mask), mask=mask)
'''
_SHOWN = '''def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)
'''
_ARGS = []


def _torch_relu():
    _ARGS[1].copy_(torch.relu(_ARGS[0]))


def _register(text):
    lines = _FILE + ["\n"] * (_AT - len(_FILE)) + text.splitlines(keepends=True)
    linecache.cache[_NAME] = (sum(map(len, lines)), None, lines, _NAME)


_register(_RAN)
_namespace = {"tl": tl, "_torch_relu": _torch_relu}
exec(compile("\n" * _AT + _RAN, _NAME, "exec"), _namespace)
relu_kernel = triton.jit(_namespace["relu_kernel"])


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _ARGS[:] = [x, y]
        _register(_RAN)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        _register(_SHOWN)
        return y
