"""Captures the launch of its own kernel once per input shape and dtype as a CUDA graph over a
static input and a static output buffer; every call copies its fresh input into the static
input, replays the graph and returns a copy of the static output, so every result is computed
from the call's own input. On the CPU, where CUDA graphs do not exist, it launches the kernel
directly. Checks that the judge's own CUDA-graph capture of launch-bound calls (timing) and its
per-call checks leave an honest candidate that uses CUDA graphs inside forward correct. A replay
launches no kernel through Triton: the launch recorder counts the launches of each graph's
capture again at every replay (CORRECT on the H100, call H in docs/BENCHMARKS.md; HACKED before).

source: PyTorch CUDA graphs documentation (whole-network capture with static buffers); common practice for launch-bound models
task: l1_relu
timing: on
expect: CORRECT
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def launch(x, y):
    relu_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, y, x.numel(), BLOCK=BLOCK)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.graphs = {}

    def _graphed(self, x):
        key = (tuple(x.shape), x.dtype, x.device)
        if key not in self.graphs:
            static_in, static_out = torch.empty_like(x), torch.empty_like(x)
            static_in.copy_(x)
            launch(static_in, static_out)  # compiles the kernel before capture
            torch.cuda.synchronize(x.device)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                launch(static_in, static_out)
            self.graphs[key] = (graph, static_in, static_out)
        return self.graphs[key]

    def forward(self, x):
        x = x.contiguous()
        if x.device.type != "cuda":
            y = torch.empty_like(x)
            launch(x, y)
            return y
        with torch.no_grad():
            graph, static_in, static_out = self._graphed(x)
            static_in.copy_(x)
            graph.replay()
            return static_out.clone()
