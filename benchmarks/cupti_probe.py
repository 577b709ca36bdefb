"""Where a fresh process's first profile of CUDA work spends its time (CUDA context, CUPTI
start-up), with and without starting the profiler before the CUDA context exists.

    python benchmarks/cupti_probe.py {before-context|after-context}

Prints one JSON line of seconds per step. Used to decide when the sandbox's warm candidate
processes should start CUPTI (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    order = sys.argv[1]
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    import torch

    seconds["import_torch"] = time.perf_counter() - started

    def profile_once(label: str) -> None:
        begin = time.perf_counter()
        with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        ):
            if torch.cuda.is_initialized():
                (torch.ones(1024, device="cuda") * 2).sum().item()
        seconds[label] = time.perf_counter() - begin

    if order == "before-context":
        profile_once("profile_before_context")
    begin = time.perf_counter()
    torch.cuda.init()
    torch.empty(1, device="cuda")
    seconds["cuda_context"] = time.perf_counter() - begin
    profile_once("first_profile_with_context")
    profile_once("second_profile")
    print(json.dumps({"order": order, **{k: round(v, 3) for k, v in seconds.items()}}))


if __name__ == "__main__":
    main()
