"""``OUT/report.json``: the record of one benchmark, a stable, versioned schema.

``format`` and ``version`` say what a file is; fields are only ever added within a version,
and a change of meaning bumps it (readers refuse versions they do not know). Times are
microseconds (``_us``) or seconds (``_seconds``), unrounded; rates are shares in [0, 1];
Fast@p maps the thresholds "0", "1", "1.2", "1.5", "2", "3" to shares of all tasks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from drkernel.errors import InvalidArgument

REPORT_FORMAT: Literal["drkernel.bench.report"] = "drkernel.bench.report"
REPORT_VERSION = 1
REPORT_FILE = "report.json"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GenerationResult(_Record):
    """One judged generation."""

    task: str
    sample: int
    turn: int
    code_sha256: str
    verdict: str = Field(description="The judge's verdict; NO_CODE (nothing to judge) or ENVIRONMENT_ERROR.")
    correct: bool
    hacked: bool
    reward: float = Field(description="The reward of the configured reward function (sandbox.reward).")
    speedup: float | None = Field(description="Over the eager reference, from valid GPU timing; None otherwise.")
    speedup_compile: float | None = Field(description="Over torch.compile of the reference; None when not timed.")
    coverage: float = Field(description="Share of the forward's device time in its own kernels.")
    hack_reasons: list[str] = []
    error: str = Field("", description="The judge's account of a failure (first lines).")
    reference_us: float | None = Field(None, description="The reference's median time in the judge.")
    candidate_us: float | None = Field(None, description="The candidate's median time in the judge.")
    device_name: str = ""
    evaluation_seconds: float = 0.0


class TaskBaseline(_Record):
    """One task's baselines, timed alike on one device: eager and torch.compile."""

    task: str
    eager_us: float | None = None
    compile_us: float | None = None
    compile_seconds: float | None = Field(None, description="torch.compile's first call (compiling).")
    error: str = ""

    @property
    def compile_over_eager(self) -> float | None:
        """torch.compile's time over eager time: a speedup over eager times this is the
        speedup over torch.compile."""
        if self.eager_us and self.compile_us:
            return self.compile_us / self.eager_us
        return None


class Baselines(_Record):
    """How the baselines were timed, or why not (``failed``: torch.compile was timed for no task)."""

    status: Literal["timed", "skipped", "failed"]
    reason: str = ""
    device_name: str = ""
    method: str = ""
    tasks: list[TaskBaseline] = []


class TaskResult(_Record):
    """One task, judged by its chosen generation (docs: services/trainer/bench/metrics.py)."""

    task: str
    name: str
    level: int | None
    generations: int
    verdict: str = Field(description="The chosen generation's verdict; MISSING when the task has none.")
    sample: int | None = None
    turn: int | None = None
    correct: bool = False
    speedup: float | None = None
    speedup_compile: float | None = None
    coverage: float = 0.0
    reward: float = 0.0
    hacked_generations: int = 0
    hack_reasons: list[str] = Field([], description="Of every hacked generation of the task, without repeats.")
    error: str = ""


class LevelSummary(_Record):
    """The tasks of one level (``other`` for tasks without one)."""

    level: str
    tasks: int
    correct_rate: float
    fast_p: dict[str, float]


class Summary(_Record):
    """What ``drkernel bench --json`` prints."""

    tasks: int = Field(description="Tasks in the set: the denominator of every task rate.")
    generations: int = Field(description="Generations judged.")
    missing_tasks: int = Field(description="Tasks without any generation (count as failed).")
    skipped_lines: int = Field(description="Lines of the generations file that were not judged.")
    correctness_profile: str
    device: str = Field(description="The judge's device, kind and name.")
    seed: int
    timing_valid: bool = Field(description="Whether any speedup was validly measured (never on CPU).")
    fast_p: dict[str, float] = Field(description="Against eager PyTorch, over all tasks.")
    fast_p_compile: dict[str, float] | None = Field(description="Against torch.compile; None when not timed.")
    correct_rate: float = Field(description="Share of all tasks with a correct generation (= Fast@0).")
    hacked_rate: float = Field(description="Share of all tasks with a generation the judge found hacked.")
    geomean_speedup: float | None = Field(description="Over eager, of the correct, timed chosen generations.")
    geomean_speedup_compile: float | None
    generation_correct_rate: float = Field(description="Share of judged generations that are correct.")
    generation_hacked_rate: float = Field(description="Share of judged generations that are hacked.")
    verdicts: dict[str, int] = Field(description="Generations per verdict.")
    levels: list[LevelSummary] = []


class TurnPoint(_Record):
    """Sequential test-time scaling at turn t: Fast@p of turn t, and of the best turn so far."""

    turn: int
    last: dict[str, float]
    best_so_far: dict[str, float]


class BestOfN(_Record):
    """Fast@p with each task judged by the best of its first N samples."""

    n: int
    fast_p: dict[str, float]


class RunInfo(_Record):
    """What ran, where, and how long."""

    source: Literal["generations", "policy"]
    generations_file: str | None = None
    policy: str | None = Field(None, description="The policy server's address, or 'embedded'.")
    model: str | None = None
    task_set: str
    task_root: str | None = None
    settings: dict[str, object] = Field(description="The bench settings used (trainer.bench, with the flags).")
    sandboxes: list[str] = Field(description="Sandbox servers; empty: one started on loopback.")
    versions: dict[str, str] = {}
    host: str = ""
    started: str = Field(description="UTC, ISO 8601.")
    seconds: dict[str, float] = Field(description="Wall-clock seconds per phase.")
    evaluations_reused: int = Field(0, description="Evaluations answered from the cache (or judged once for two).")
    evaluations_judged: int = 0
    evaluation_seconds: dict[str, float] = Field({}, description="Median, p90 and max of the judge's own time.")
    policy_failures: list[str] = Field([], description="Tasks the policy failed on (they count as missing), and why.")


class Report(_Record):
    """The whole record."""

    format: Literal["drkernel.bench.report"] = REPORT_FORMAT
    version: int = REPORT_VERSION
    run: RunInfo
    summary: Summary
    turns: list[TurnPoint]
    best_of_n: list[BestOfN]
    baselines: Baselines
    tasks: list[TaskResult]
    generations: list[GenerationResult]
    skipped: list[str] = Field([], description="Lines not judged, with the reason.")


def write_report(report: Report, out_dir: Path) -> Path:
    path = out_dir / REPORT_FILE
    path.write_text(report.model_dump_json(indent=1) + "\n")
    return path


def read_report(path: Path) -> Report:
    """A report.json (or the folder holding one); InvalidArgument if it is not one this
    version reads."""
    if path.is_dir():
        path = path / REPORT_FILE
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise InvalidArgument(f"{path} is not JSON: {error.msg}") from None
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        raise InvalidArgument(f"{path} is not a drkernel bench report")
    if data.get("version") != REPORT_VERSION:
        raise InvalidArgument(f"{path} is report version {data.get('version')}; this drkernel reads {REPORT_VERSION}")
    try:
        return Report.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        raise InvalidArgument(f"{path}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
