"""Baselines: when they are timed, and what a task that cannot be timed leaves in the report
(the real timing process; torch.compile itself takes tens of seconds per task on CPU and is
timed on a GPU by benchmarks/bench_gpu.sh)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from services.sandbox.settings import TimingSettings
from services.sandbox.tasks import builtin_task
from services.trainer.bench.baselines import should_time, time_baselines
from services.trainer.bench.cache import ResultCache
from services.trainer.bench.schema import Baselines
from services.trainer.bench.tasks import BenchTask

NOT_A_TASK = "import torch\n\nbatch_size = 4\n"  # no Model: the timing process reports it


def test_baselines_are_timed_on_a_gpu_unless_asked() -> None:
    assert should_time("auto", "cuda") is None and should_time("on", "cpu") is None
    assert "no speedup is valid" in (should_time("auto", "cpu") or "")
    assert "turned off" in (should_time("off", "cuda") or "")


@pytest.mark.slow
def test_a_task_that_cannot_be_timed_is_reported(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "cache.jsonl")

    def run(task: BenchTask, timeout_seconds: float) -> Baselines:
        return asyncio.run(
            time_baselines([task], "cpu", "cpu", 0, TimingSettings(), 1, 3, timeout_seconds, cache, False)
        )

    late = run(BenchTask("relu", "relu", builtin_task("l1_relu").source()), 0.2)
    assert late.status == "failed" and late.tasks[0].error == "timed out after 0.2 s"
    broken = run(BenchTask("broken", "broken", NOT_A_TASK), 300)
    assert broken.status == "failed"
    assert "does not define Model" in broken.tasks[0].error and broken.tasks[0].eager_us is None
    assert len(cache) == 0  # failures are tried again next time
