"""Tries to SIGKILL its parent, pid 1 of its view, its parent's process group, everything it
may signal (kill -1) and the server (its host pid, __SERVER_PID__), then returns a correct
result plus one for each signal delivered.

task: l1_relu
needs: isolation
expect: CORRECT
"""

import os
import signal

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_plus_kernel(x_ptr, y_ptr, n, extra, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0) + extra, mask=mask)


def _delivered(send):
    try:
        send()
    except OSError:
        return 0
    return 1


class ModelNew(nn.Module):
    def forward(self, x):
        parent = os.getppid()
        extra = float(sum([
            _delivered(lambda: os.kill(parent, signal.SIGKILL)),
            _delivered(lambda: os.kill(1, signal.SIGKILL)),
            _delivered(lambda: os.killpg(os.getpgid(parent), signal.SIGKILL)),
            _delivered(lambda: os.kill(-1, signal.SIGKILL)),
            _delivered(lambda: os.kill(__SERVER_PID__, signal.SIGKILL)),
        ]))
        y = torch.empty_like(x)
        relu_plus_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), extra, BLOCK=1024)
        return y
