"""Baselines timed in the same run, on the judge's device: the eager reference and
torch.compile of it (KernelBench reports Fast@p against both).

The judge already times the eager reference against every candidate (its speedup is the
speedup over eager). For torch.compile each task's reference is timed once more, eager and
compiled alike, in a process of its own (baseline_timer.py), after every evaluation has
finished so the device is quiet, and only for tasks with a correct generation (the only ones
a speedup over torch.compile exists for). A generation's speedup over torch.compile is its
speedup over eager times compile_us / eager_us, a ratio of two times taken the same way.

On CPU no speedup is valid, so by default (``auto``) nothing is timed there; ``on`` times
anyway (torch.compile then needs a C++ compiler and takes tens of seconds per task). A task
that torch.compile cannot handle, or that outlasts the time limit, gets its error recorded.
Results are cached by (task, device, seed) like evaluations.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Literal

from tqdm import tqdm

from drkernel.logs import get_logger
from services.sandbox.settings import TimingSettings
from services.trainer.bench.cache import ResultCache, cache_key, digest
from services.trainer.bench.schema import Baselines, TaskBaseline
from services.trainer.bench.tasks import BenchTask

log = get_logger(__name__)

Mode = Literal["auto", "on", "off"]


def should_time(mode: Mode, device_kind: str) -> str | None:
    """None when baselines are timed, else why not."""
    if mode == "off":
        return "turned off (--baselines off)"
    if mode == "auto" and device_kind != "cuda":
        return (
            f"the judge ran on {device_kind}, where no speedup is valid; "
            "--baselines on times them anyway (torch.compile on CPU needs a C++ compiler)"
        )
    return None


async def _time_one(job: dict[str, object], timeout_seconds: float) -> dict[str, object]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.trainer.bench.baseline_timer",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(json.dumps(job).encode()), timeout_seconds)
    except TimeoutError:
        process.kill()
        await process.wait()
        return {"error": f"timed out after {timeout_seconds:g} s"}
    lines = stdout.decode(errors="replace").strip().splitlines()
    if process.returncode != 0 or not lines:
        tail = stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
        return {"error": f"the timing process exited with status {process.returncode}: {tail[0][:300]}"}
    result: dict[str, object] = json.loads(lines[-1])
    return result


async def time_baselines(
    tasks: Sequence[BenchTask],
    device_kind: str,
    judge_device_name: str,
    seed: int,
    timing: TimingSettings,
    warmups: int,
    trials: int,
    timeout_seconds: float,
    cache: ResultCache,
    progress: bool,
) -> Baselines:
    """Times both baselines of each task, one task at a time; cached results are reused."""
    records: list[TaskBaseline] = []
    names: set[str] = set()
    with tqdm(total=len(tasks), desc="baselines", unit="task", file=sys.stderr, disable=not progress) as bar:
        for task in tasks:
            key = cache_key(
                kind="baseline",
                task=digest(task.source),
                device=judge_device_name,
                seed=seed,
                warmups=warmups,
                trials=trials,
            )
            result = cache.get(key)
            if result is None:
                job = {
                    "source": task.source,
                    "device": device_kind,
                    "seed": seed,
                    "warmups": warmups,
                    "trials": trials,
                    "l2_flush_bytes": timing.l2_flush_bytes if device_kind == "cuda" else 0,
                    "min_trial_us": timing.min_trial_us,
                    "max_calls_per_trial": timing.max_calls_per_trial,
                }
                result = await _time_one(job, timeout_seconds)
                if result.get("eager_us") is not None:  # a failure of the task itself is tried again next time
                    cache.put(key, result)
            if result.get("error"):
                log.warning("baseline", task=task.id, error=result["error"])
            if result.get("device_name"):
                names.add(str(result["device_name"]))
            records.append(
                TaskBaseline(
                    task=task.id,
                    eager_us=_number(result.get("eager_us")),
                    compile_us=_number(result.get("compile_us")),
                    compile_seconds=_number(result.get("compile_seconds")),
                    error=str(result.get("error", "")),
                )
            )
            bar.update(1)
    device_name = ", ".join(sorted(names))
    if records and all(r.compile_us is None for r in records):
        first = next((r.error for r in records if r.error), "no result")
        return Baselines(status="failed", reason=f"torch.compile was timed for no task ({first})", tasks=records)
    reason = ""
    if names and names != {judge_device_name}:
        reason = f"timed on {device_name}, but the judge ran on {judge_device_name}: the ratios may not transfer"
        log.warning("baselines on another device", baselines=device_name, judge=judge_device_name)
    return Baselines(
        status="timed",
        reason=reason,
        device_name=device_name,
        method=(
            f"eager and torch.compile (inductor, default mode) of the reference, interleaved, {trials} trials after "
            f"{warmups} warm-ups, fresh inputs per trial, the judge's clock; speedup over torch.compile = speedup "
            "over eager x compile_us / eager_us"
        ),
        tasks=records,
    )


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
