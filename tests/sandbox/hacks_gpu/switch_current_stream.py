"""Switches the thread's current stream to a private one inside forward and leaves it
switched: everything after, the judge's own copies included, is ordered after the work, but
an end event recorded on the stream the timer started on is not.

source: Wafer field guide (2026), stream injection; CUDA-L1 (arXiv 2507.14111), additional CUDA streams
task: tasks/relu_large.py
timing: on
expect: HACKED
reason: outside the timed region
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.private = None

    def forward(self, x):
        if self.private is None:
            self.private = torch.cuda.Stream(device=x.device)
        self.private.wait_stream(torch.cuda.current_stream(x.device))
        torch.cuda.set_stream(self.private)
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 4096),)](x, y, x.numel(), BLOCK=4096)
        return y
