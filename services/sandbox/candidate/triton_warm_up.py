"""One Triton launch of the harness's own while the process waits in the warm pool.

A process's first Triton launch pays for work that does not depend on the kernel: hashing
Triton's own compiler files into the cache key, loading the GPU backend, building and loading
the driver's helper module. On an H100 that was 0.3-0.4 s of every evaluation (the
candidate's kernels themselves come from the compiled-kernel cache when they were compiled
before). Done here, it is paid while no evaluation waits. The launch writes its compiled files
into a cache directory of its own, so the candidate's Triton cache (saved per source after the
evaluation) holds only what the candidate compiled.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
import triton
import triton.language as tl


@triton.jit
def _store_one(out_ptr):
    tl.store(out_ptr, 1.0)


def warm_up_triton(device: torch.device, cache_dir: Path) -> None:
    """Compiles and launches a one-store kernel on ``device``, its files under ``cache_dir``
    (Triton reads ``$TRITON_CACHE_DIR`` at each compile; the candidate's is restored after)."""
    previous = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = str(cache_dir)
    try:
        out = torch.zeros(1, device=device)
        _store_one[(1,)](out)
        torch.cuda.synchronize(device)
    finally:
        if previous is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = previous
