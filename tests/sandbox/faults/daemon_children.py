"""Leaves daemons behind: double fork, setsid, a new name (__TOKEN__) and an hour of sleep,
confirmed running before forward returns a correct result (plus one if no daemon started).

task: l1_relu
needs: isolation
expect: CORRECT
"""

import ctypes
import os
import time
from pathlib import Path

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_plus_kernel(x_ptr, y_ptr, n, extra, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0) + extra, mask=mask)


def _daemonise(flag):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            ctypes.CDLL(None).prctl(15, b"__TOKEN__", 0, 0, 0)
            flag.write_text(str(os.getpid()))
            time.sleep(3600)
        os._exit(0)


class ModelNew(nn.Module):
    def forward(self, x):
        flag = Path(os.environ["TMPDIR"]) / f"daemon-{os.getpid()}-{time.monotonic_ns()}"
        _daemonise(flag)
        deadline = time.monotonic() + 10
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        y = torch.empty_like(x)
        relu_plus_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), 0.0 if flag.exists() else 1.0, BLOCK=1024)
        return y
