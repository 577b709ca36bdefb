"""A CPU thread enqueues the kernel a few milliseconds after forward returns (forward hands
back an empty output), so the launch itself happens outside the timed region. Forward
compiles the kernel for the thread first (same specialisation, one program), so the late
launch is quick. Caught as a late write when the launch lands within the judge's wait, judged
on the empty output (incorrect) when it lands later: never correct either way (an H100 run
of a version without the warm-up saw the latter).

source: Wafer field guide (2026), timing attack "thread injection"
task: tasks/relu_large.py
timing: on
expect: not CORRECT
"""

import threading
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def _launch(x, y):
    time.sleep(0.005)
    relu_kernel[(triton.cdiv(x.numel(), 4096),)](x, y, x.numel(), BLOCK=4096)


class ModelNew(nn.Module):
    def forward(self, x):
        relu_kernel[(1,)](x, torch.empty_like(x), x.numel(), BLOCK=4096)
        y = torch.empty_like(x)
        threading.Thread(target=_launch, args=(x, y), daemon=True).start()
        return y
