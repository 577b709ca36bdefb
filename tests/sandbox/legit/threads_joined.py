"""Splits the work between two threads, each launching the kernel on half of the input, and
joins both before returning: threads are fine when the work is done by return. Timed: the
judge's CUDA-graph capture of launch-bound calls holds none of a thread's launches (they run at
once on the thread's own stream), so such a capture is refused and the calls timed eagerly
(HACKED on the H100 before, 2026-11-26: the empty graph's replays left stale outputs).

source: contrast case to the "thread injection" hack (Wafer field guide, 2026)
task: l1_relu
timing: on
expect: CORRECT
"""

import threading

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def _relu_into(x, y):
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)


class ModelNew(nn.Module):
    def forward(self, x):
        flat = x.contiguous().view(-1)
        out = torch.empty_like(flat)
        half = flat.numel() // 2
        workers = [
            threading.Thread(target=_relu_into, args=(flat[:half], out[:half])),
            threading.Thread(target=_relu_into, args=(flat[half:], out[half:])),
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return out.view(x.shape)
