"""``drkernel report compare A B``: two benchmark reports side by side, the difference B - A,
the tasks whose outcome changed, and a plot of both runs' Fast@p."""

from __future__ import annotations

from pathlib import Path

from services.trainer.bench.markdown import pct, times
from services.trainer.bench.metrics import THRESHOLDS
from services.trainer.bench.schema import Report, TaskResult


def _label(report: Report) -> str:
    run = report.run
    return (run.generations_file or f"policy {run.policy}") or "?"


def _row(name: str, a: float | None, b: float | None, shown: str = "rate") -> str:
    show = pct if shown == "rate" else times
    if a is None or b is None:
        delta = "-"
    elif shown == "rate":
        delta = f"{100 * (b - a):+.1f} pt"
    else:
        delta = f"{b - a:+.3f}x"
    return f"{name:<26} {show(a):>10} {show(b):>10} {delta:>10}"


def _outcome(task: TaskResult | None) -> str:
    if task is None:
        return "(absent)"
    return f"{task.verdict} {times(task.speedup)}" if task.correct else task.verdict


def comparison(a: Report, b: Report) -> str:
    """The comparison as plain text."""
    sa, sb = a.summary, b.summary
    lines = [f"A: {_label(a)} ({sa.device}, {sa.correctness_profile}, {sa.tasks} tasks)"]
    lines.append(f"B: {_label(b)} ({sb.device}, {sb.correctness_profile}, {sb.tasks} tasks)")
    for what, x, y in (
        ("device", sa.device, sb.device),
        ("correctness profile", sa.correctness_profile, sb.correctness_profile),
    ):
        if x != y:
            lines.append(f"note: the {what} differs ({x} / {y}); the numbers are not measured alike")
    tasks_a, tasks_b = {t.task for t in a.tasks}, {t.task for t in b.tasks}
    if tasks_a != tasks_b:
        lines.append(
            f"note: the task sets differ ({len(tasks_a & tasks_b)} tasks in common); "
            "each rate is over its own run's tasks"
        )
    header = f"{'':<26} {'A':>10} {'B':>10} {'B - A':>10}"
    lines += ["", header, "-" * len(header)]
    lines.append(_row("correct (tasks)", sa.correct_rate, sb.correct_rate))
    lines.append(_row("hacked (tasks)", sa.hacked_rate, sb.hacked_rate))
    lines += [_row(f"Fast@{p} vs eager", sa.fast_p[p], sb.fast_p[p]) for p in THRESHOLDS]
    if sa.fast_p_compile is not None or sb.fast_p_compile is not None:
        lines += [
            _row(
                f"Fast@{p} vs torch.compile",
                sa.fast_p_compile[p] if sa.fast_p_compile else None,
                sb.fast_p_compile[p] if sb.fast_p_compile else None,
            )
            for p in THRESHOLDS
        ]
    lines.append(_row("geomean speedup", sa.geomean_speedup, sb.geomean_speedup, "times"))
    lines.append(_row("correct (generations)", sa.generation_correct_rate, sb.generation_correct_rate))
    lines.append(_row("hacked (generations)", sa.generation_hacked_rate, sb.generation_hacked_rate))
    before = {t.task: t for t in a.tasks}
    after = {t.task: t for t in b.tasks}
    changed = [
        (task, _outcome(before.get(task)), _outcome(after.get(task)))
        for task in [*before, *(t for t in after if t not in before)]
        if _outcome(before.get(task)) != _outcome(after.get(task))
    ]
    lines += ["", f"{len(changed)} task(s) changed" + (":" if changed else "")]
    width = max((len(task) for task, _, _ in changed), default=0)
    lines += [f"  {task:<{width}}  {x}  ->  {y}" for task, x, y in changed]
    return "\n".join(lines)


def comparison_plot(a: Report, b: Report, path: Path) -> Path:
    """Fast@p of both runs as grouped bars (against torch.compile too where both timed it)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 4.5), layout="constrained")
    axes = figure.add_subplot()
    series = [("A vs eager", a.summary.fast_p), ("B vs eager", b.summary.fast_p)]
    if a.summary.fast_p_compile is not None and b.summary.fast_p_compile is not None:
        series += [("A vs torch.compile", a.summary.fast_p_compile), ("B vs torch.compile", b.summary.fast_p_compile)]
    width = 0.8 / len(series)
    for index, (name, values) in enumerate(series):
        xs = [i + (index - (len(series) - 1) / 2) * width for i in range(len(THRESHOLDS))]
        axes.bar(
            xs, [values[p] for p in THRESHOLDS], width=width, label=name, hatch="//" if "compile" in name else None
        )
    axes.set_xticks(range(len(THRESHOLDS)), [f"Fast@{p}" for p in THRESHOLDS])
    axes.set_ylim(0, 1.02)
    axes.set_ylabel("share of all tasks")
    axes.set_title(f"A: {_label(a)}\nB: {_label(b)}", fontsize="small")
    axes.grid(alpha=0.3, axis="y")
    axes.legend(loc="best", fontsize="small")
    figure.savefig(path, dpi=100)
    return path
