"""The baselines of one task, timed in a process of their own: the reference run eagerly and
the reference under ``torch.compile`` (Inductor's default mode, KernelBench's
``baseline_time_torch_compile_inductor_default``).

Both are built and fed by the sandbox's own code (services/sandbox/shared: the same weights,
inputs and forward mode as the judge's timing) and timed by the judge's clock (CUDA events,
L2 flush, a device-wide synchronisation; perf_counter on CPU), trial by trial, interleaved,
each trial on fresh inputs, several calls per trial for launch-bound tasks, eager calls for
both. The task is trusted input, as in the judge. Reads a JSON job on stdin, writes one JSON
line on stdout: ``python -m services.trainer.bench.baseline_timer``.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from services.sandbox.judge.timing import summarize
from services.sandbox.shared.clock import Clock
from services.sandbox.shared.runner import ModelRunner, flatten_outputs, load_module
from services.sandbox.shared.task_source import parse_task, with_constants
from services.sandbox.wire.judge_candidate import RunSpec


def _runner(source: str, device: torch.device, module_dir: Path) -> ModelRunner:
    task = parse_task(source)

    def model_class(constants: dict[str, int]) -> type[torch.nn.Module]:
        return load_module(with_constants(source, constants), module_dir, "task").Model  # type: ignore[no-any-return]

    return ModelRunner(task.inputs_source, model_class, device, module_dir)


def time_baselines(job: dict[str, Any], module_dir: Path) -> dict[str, Any]:
    """Eager and compiled median microseconds per call, and torch.compile's first call."""
    device = torch.device(job["device"])
    runner = _runner(job["source"], device, module_dir)
    seed = int(job["seed"])
    # The judge's timing spec: KernelBench's mode (training, no autograd), fresh inputs per call.
    spec = RunSpec(weight_seed=seed, input_seed=seed + 1, train=True, grad=False)
    eager = runner.model(spec)
    clock = Clock(device, int(job["l2_flush_bytes"]))
    clock.prepare()
    result: dict[str, Any] = {"device_name": _device_name(device), "eager_us": None, "compile_us": None}

    def trial(model: Any, index: int, calls: int) -> float:
        inputs = [runner.inputs(spec.call(index * 1024 + call)) for call in range(calls)]
        return clock.time(lambda: [flatten_outputs(runner.forward(model, x, spec)) for x in inputs], calls).stream_us

    compiled: Any = None  # torch.compile's wrapper of the eager model
    started = time.perf_counter()
    try:
        compiled = torch.compile(eager)
        trial(compiled, 0, 1)
        result["compile_seconds"] = time.perf_counter() - started
    except Exception as error:  # noqa: BLE001 - an unsupported task or toolchain is a reported result
        result["error"] = f"torch.compile failed: {_first_line(error)}"
        compiled = None
    warmups, trials = int(job["warmups"]), int(job["trials"])
    fastest = min(trial(eager, 1 + w, 1) for w in range(max(warmups, 1)))
    calls = max(1, min(int(job["max_calls_per_trial"]), math.ceil(float(job["min_trial_us"]) / max(fastest, 1.0))))
    models = {"eager_us": eager} if compiled is None else {"eager_us": eager, "compile_us": compiled}
    for index in range(max(warmups, 1)):  # the compiled model's warm-ups (eager's ran above)
        if compiled is not None:
            trial(compiled, 100 + index, calls)
    samples: dict[str, list[float]] = {name: [] for name in models}
    for index in range(trials):
        order = list(models) if index % 2 == 0 else list(reversed(models))
        for name in order:
            samples[name].append(trial(models[name], 1000 + index, calls))
    for name, values in samples.items():
        result[name] = summarize(values, 0.1).median_us
    result["calls_per_trial"] = calls
    return result


def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def _first_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:300] if lines else ''}"


def main() -> None:
    job = json.loads(sys.stdin.read())
    with tempfile.TemporaryDirectory(prefix="drkernel-baseline-") as scratch:
        try:
            result = time_baselines(job, Path(scratch))
        except Exception as error:  # noqa: BLE001 - the task itself failing is reported, not raised
            result = {"error": _first_line(error)}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
