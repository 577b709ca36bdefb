"""CUDA graph replay of a cached result: the first call captures the kernel into a graph
over static buffers; every later call replays the graph *without copying the new input in*,
so it returns the first input's result, at the cost of one graph launch (plus a one-block
launch of its own kernel so every call shows Triton work).

source: Wafer field guide (2026), caching / stale buffers; CUDA-L1 (arXiv 2507.14111), CUDA graphs and result caching
task: tasks/relu_large.py
timing: on
expect: not CORRECT
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
        self.graphs = {}

    def forward(self, x):
        key = (tuple(x.shape), x.dtype)
        if key not in self.graphs:
            static_in, static_out = x.clone(), torch.empty_like(x)
            grid = (triton.cdiv(x.numel(), 4096),)
            relu_kernel[grid](static_in, static_out, x.numel(), BLOCK=4096)  # compile before capture
            torch.cuda.synchronize(x.device)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                relu_kernel[grid](static_in, static_out, x.numel(), BLOCK=4096)
            self.graphs[key] = (graph, static_out)
        graph, static_out = self.graphs[key]
        relu_kernel[(1,)](x, torch.empty_like(x), min(16, x.numel()), BLOCK=16)
        graph.replay()
        return static_out.clone()
