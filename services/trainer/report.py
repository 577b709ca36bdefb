"""Curves and a summary table of a training run, from its ``metrics.jsonl``.

The training loop appends one JSON object per finished step (services/trainer/loop.py,
``StepRecord``). This turns a run directory into PNG curves (reward; correctness and hacking;
the MRS, PRS and veto rejection rates; the log-prob mismatch between learner and sampler; where
a step's time goes) and a plain-text table with each metric's first, last and best value, so a
run can be judged without a dashboard. The file may be read while the run writes it: a last
line without its end is ignored, and after a resume the latest record of a step wins.

Drawing uses matplotlib's object-oriented API on the Agg canvas (no pyplot, no display and no
global backend switch), so it is safe inside servers and threads.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from drkernel.errors import InvalidArgument

METRICS_FILE = "metrics.jsonl"
REPORT_DIR = "report"
SUMMARY_FILE = "summary.txt"
PHASES = ("generating", "evaluating", "logprobs", "updating", "syncing")
# Keys that count or identify rather than measure: not in the table.
_NOT_METRICS = frozenset({"step", "weights_version"})
# Metrics where more is better; every other known metric is better lower.
_HIGHER_BETTER = frozenset({"reward_mean", "correct_rate", "coverage_mean", "speedup_mean"})
_LOWER_BETTER = frozenset(
    {
        "hacked_rate",
        "mrs_rejected_rate",
        "prs_rejected_rate",
        "veto_rate",
        "logprob_mismatch",
        "seconds_step",
        *(f"seconds_{phase}" for phase in PHASES),
    }
)


def read_metrics(path: Path) -> list[dict[str, float]]:
    """The numeric values of each step's record, ordered by step (the last record of a step
    written twice, as after a resume, wins). A last line cut off mid-write is skipped; any
    other line that is not a JSON object is an InvalidArgument naming it."""
    lines = path.read_text().splitlines()
    by_step: dict[float, dict[str, float]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                break  # still being written
            raise InvalidArgument(f"{path}:{number}: not a JSON object") from None
        if not isinstance(record, dict) or not _is_number(record.get("step")):
            raise InvalidArgument(f"{path}:{number}: expected a JSON object with a numeric step")
        by_step[record["step"]] = {k: float(v) for k, v in record.items() if _is_number(v)}
    return [by_step[step] for step in sorted(by_step)]


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ----- the table ------------------------------------------------------------------------------


def _best(key: str, points: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """(step, value) of the best finite value of a metric whose direction is known."""
    finite = [p for p in points if math.isfinite(p[1])]
    if not finite or (key not in _HIGHER_BETTER and key not in _LOWER_BETTER):
        return None
    if key in _HIGHER_BETTER:
        return max(finite, key=lambda p: (p[1], -p[0]))
    return min(finite, key=lambda p: (p[1], p[0]))


def _format(value: float) -> str:
    if not math.isfinite(value):
        return str(value)
    if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
        return f"{value:.3e}"
    return f"{value:.4f}"


def summary_table(rows: Sequence[Mapping[str, float]]) -> str:
    """Each metric's first, last and best value (with the step it was reached at), one line
    per metric in the order metrics first appear; best is left blank for metrics without a
    known direction."""
    series: dict[str, list[tuple[float, float]]] = {}
    for index, row in enumerate(rows):
        step = row.get("step", float(index))
        for key, value in row.items():
            if key not in _NOT_METRICS:
                series.setdefault(key, []).append((step, value))
    if not series:
        return "no metrics"
    width = max(len("metric"), *(len(k) for k in series))
    header = f"{'metric':<{width}}  {'first':>11}  {'last':>11}  {'best':>11}  {'at step':>7}"
    lines = [header, "-" * len(header)]
    for key, points in series.items():
        best = _best(key, points)
        best_text = f"{_format(best[1]):>11}  {best[0]:>7g}" if best else f"{'-':>11}  {'':>7}"
        lines.append(f"{key:<{width}}  {_format(points[0][1]):>11}  {_format(points[-1][1]):>11}  {best_text}")
    steps = [row["step"] for row in rows if "step" in row]
    if steps:
        lines.append(f"{len(rows)} steps, {min(steps):g} to {max(steps):g}")
    return "\n".join(lines)


# ----- the curves -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Chart:
    """One PNG: the metrics drawn as lines on shared axes."""

    file: str
    title: str
    ylabel: str
    keys: tuple[str, ...]
    rates: bool = False  # values are shares in [0, 1]


_CHARTS = (
    _Chart("reward.png", "Reward", "mean reward per turn", ("reward_mean",)),
    _Chart("correctness.png", "Correct and hacked turns", "share of turns", ("correct_rate", "hacked_rate"), True),
    _Chart(
        "rejection.png",
        "Rejected by MRS, PRS and token veto",
        "share",
        ("mrs_rejected_rate", "prs_rejected_rate", "veto_rate"),
        True,
    ),
    _Chart("logprob_mismatch.png", "Learner vs sampler log-prob mismatch", "mismatch", ("logprob_mismatch",)),
)


def _moving_average(values: Sequence[float], window: int) -> list[float]:
    """Trailing mean over up to ``window`` values (shorter at the start)."""
    out, total = [], 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def _points(rows: Sequence[Mapping[str, float]], key: str) -> tuple[list[float], list[float]]:
    pairs = [(row.get("step", float(i)), row[key]) for i, row in enumerate(rows) if key in row]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _line_chart(chart: _Chart, rows: Sequence[Mapping[str, float]], path: Path) -> bool:
    """Draws the chart if any of its metrics was recorded; whether it did."""
    from matplotlib.figure import Figure

    present = [key for key in chart.keys if any(key in row for row in rows)]
    if not present:
        return False
    figure = Figure(figsize=(8, 4.5), layout="constrained")
    axes = figure.add_subplot()
    for key in present:
        steps, values = _points(rows, key)
        window = max(1, len(values) // 20)
        if window > 1:  # a noisy curve gets its trailing mean drawn over it
            line = axes.plot(steps, values, alpha=0.35, linewidth=1)[0]
            axes.plot(
                steps,
                _moving_average(values, window),
                color=line.get_color(),
                linewidth=2,
                label=f"{key} (mean of {window})",
            )
        else:
            axes.plot(steps, values, marker="o" if len(values) < 30 else None, markersize=3, label=key)
    if chart.rates:
        axes.set_ylim(-0.02, 1.02)
    axes.set_title(chart.title)
    axes.set_xlabel("step")
    axes.set_ylabel(chart.ylabel)
    axes.grid(alpha=0.3)
    axes.legend(loc="best", fontsize="small")
    figure.savefig(path, dpi=100)
    return True


def _time_chart(rows: Sequence[Mapping[str, float]], path: Path) -> bool:
    """Step time stacked by phase, with the measured step time on top."""
    from matplotlib.figure import Figure

    phases = [p for p in PHASES if any(f"seconds_{p}" in row for row in rows)]
    if not phases and not any("seconds_step" in row for row in rows):
        return False
    figure = Figure(figsize=(8, 4.5), layout="constrained")
    axes = figure.add_subplot()
    steps = [row.get("step", float(i)) for i, row in enumerate(rows)]
    if phases:
        axes.stackplot(
            steps, *([row.get(f"seconds_{p}", 0.0) for row in rows] for p in phases), labels=phases, alpha=0.8
        )
    if any("seconds_step" in row for row in rows):
        axes.plot(*_points(rows, "seconds_step"), color="black", linewidth=1.5, label="step (wall clock)")
    axes.set_title("Where a step's time goes (generating and evaluating summed over turns)")
    axes.set_xlabel("step")
    axes.set_ylabel("seconds")
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")  # beside the stack
    figure.savefig(path, dpi=100)
    return True


def write_report(run_dir: Path) -> list[Path]:
    """Writes ``run_dir/report/``: one PNG per chart whose metrics the run recorded and
    ``summary.txt`` (the table); returns the files written."""
    rows = read_metrics(run_dir / METRICS_FILE)
    out = run_dir / REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for chart in _CHARTS:
        if _line_chart(chart, rows, out / chart.file):
            written.append(out / chart.file)
    if _time_chart(rows, out / "step_time.png"):
        written.append(out / "step_time.png")
    summary = out / SUMMARY_FILE
    summary.write_text(summary_table(rows) + "\n")
    written.append(summary)
    return written
