"""The report's PNG plots, drawn with matplotlib's object-oriented API on the Agg canvas (no
pyplot, no display, no global backend switch), like the trainer's run report. Every plot is
always written, with a note on the canvas when there is nothing to draw (no valid speedups on
CPU), so that a report's files do not depend on its numbers."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from services.trainer.bench.metrics import THRESHOLDS
from services.trainer.bench.schema import Report

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _figure() -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 4.5), layout="constrained")
    return figure, figure.add_subplot()


def _rates(axes: Axes, title: str, xlabel: str) -> None:
    axes.set_ylim(-0.02, 1.02)
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("share of all tasks")
    axes.grid(alpha=0.3)


def _colors(count: int) -> list[tuple[float, float, float, float]]:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    return [cmap(i / max(count - 1, 1) * 0.9) for i in range(count)]


def turns_plot(report: Report, path: Path) -> None:
    figure, axes = _figure()
    turns = [t.turn for t in report.turns]
    marker = "o" if len(turns) < 30 else None
    for p, color in zip(THRESHOLDS, _colors(len(THRESHOLDS)), strict=True):
        axes.plot(turns, [t.last[p] for t in report.turns], color=color, marker=marker, label=f"Fast@{p} last turn")
        axes.plot(
            turns,
            [t.best_so_far[p] for t in report.turns],
            color=color,
            linestyle="--",
            marker=marker,
            label=f"Fast@{p} best so far",
        )
    if not turns:
        axes.text(0.5, 0.5, "no generations", ha="center", va="center", transform=axes.transAxes)
    axes.set_xticks(turns)
    _rates(axes, "Sequential test-time scaling: Fast@p by turn", "turn")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    figure.savefig(path, dpi=100)


def best_of_n_plot(report: Report, path: Path) -> None:
    figure, axes = _figure()
    counts = [b.n for b in report.best_of_n]
    for p, color in zip(THRESHOLDS, _colors(len(THRESHOLDS)), strict=True):
        axes.plot(counts, [b.fast_p[p] for b in report.best_of_n], color=color, marker="o", label=f"Fast@{p}")
    if not counts:
        axes.text(0.5, 0.5, "no generations", ha="center", va="center", transform=axes.transAxes)
    axes.set_xticks(counts)
    _rates(axes, "Best of N samples", "samples per task (N)")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    figure.savefig(path, dpi=100)


def speedup_plot(report: Report, path: Path) -> None:
    figure, axes = _figure()
    series = {
        "over eager PyTorch": [g.speedup for g in report.generations if g.correct and g.speedup],
        "over torch.compile": [g.speedup_compile for g in report.generations if g.correct and g.speedup_compile],
    }
    drawn = {name: values for name, values in series.items() if values}
    if drawn:
        values = [v for vs in drawn.values() for v in vs if v is not None]
        low, high = math.log2(min(values)), math.log2(max(values))
        bins = [2 ** (low + (high - low + 1e-9) * i / 20) for i in range(21)] if high > low else 10
        for (name, vs), color in zip(drawn.items(), _colors(2), strict=False):
            axes.hist(vs, bins=bins, alpha=0.6, color=color, label=f"{name} ({len(vs)})")
        axes.set_xscale("log", base=2)
        axes.axvline(1.0, color="black", linewidth=1)
        axes.legend(loc="best", fontsize="small")
    else:
        axes.text(
            0.5,
            0.5,
            "no validly timed correct generation\n(CPU timing is never valid)",
            ha="center",
            va="center",
            transform=axes.transAxes,
        )
    axes.set_title("Speedups of correct generations")
    axes.set_xlabel("speedup (log scale)")
    axes.set_ylabel("generations")
    axes.grid(alpha=0.3)
    figure.savefig(path, dpi=100)


def levels_plot(report: Report, path: Path) -> None:
    figure, axes = _figure()
    levels = report.summary.levels
    bars = ("0", "1", "1.2", "1.5", "2")
    width = 0.8 / len(bars)
    for index, (p, color) in enumerate(zip(bars, _colors(len(bars)), strict=True)):
        xs = [i + (index - (len(bars) - 1) / 2) * width for i in range(len(levels))]
        label = "correct (Fast@0)" if p == "0" else f"Fast@{p}"
        axes.bar(xs, [lv.fast_p[p] for lv in levels], width=width, color=color, label=label)
    axes.set_xticks(range(len(levels)), [f"level {lv.level}\n({lv.tasks} tasks)" for lv in levels])
    _rates(axes, "By level", "")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    figure.savefig(path, dpi=100)


# Each plot: file, title (report.md's caption), how it is drawn.
PLOTS: tuple[tuple[str, str, Callable[[Report, Path], None]], ...] = (
    ("fast_p_turns.png", "Fast@p by turn: last turn (solid) and best turn so far (dashed)", turns_plot),
    ("best_of_n.png", "Fast@p of the best of N samples", best_of_n_plot),
    ("speedup_distribution.png", "Speedups of the correct generations", speedup_plot),
    ("levels.png", "By level", levels_plot),
)


def write_plots(report: Report, out_dir: Path) -> list[Path]:
    """Draws every plot into ``out_dir``; returns the files."""
    for name, _, draw in PLOTS:
        draw(report, out_dir / name)
    return [out_dir / name for name, _, _ in PLOTS]
