"""``OUT/report.md``: the report as tables, for people (report.json is the record)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from services.trainer.bench.metrics import THRESHOLDS
from services.trainer.bench.plots import PLOTS
from services.trainer.bench.schema import Report


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def times(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def _fast(values: Mapping[str, float] | None) -> list[str]:
    return [pct(values[p]) if values is not None else "-" for p in THRESHOLDS]


def render(report: Report) -> str:
    s, run = report.summary, report.run
    source = run.generations_file if run.source == "generations" else f"policy {run.policy}"
    lines = [
        "# drkernel bench",
        "",
        f"{source} over the {run.task_set} task set{f' ({run.task_root})' if run.task_root else ''}; judge on "
        f"{s.device}, profile {s.correctness_profile}, seed {s.seed}; started {run.started} on {run.host}; "
        + ", ".join(f"{k} {v}" for k, v in run.versions.items())
        + ".",
        "",
        f"{s.tasks} tasks, {s.generations} generations judged ({run.evaluations_judged} evaluations run, "
        f"{run.evaluations_reused} reused), {s.missing_tasks} tasks without a generation, {s.skipped_lines} lines "
        f"skipped. Wall clock: " + ", ".join(f"{k} {v:.0f} s" for k, v in run.seconds.items()) + ".",
        "",
    ]
    if not s.timing_valid:
        lines += ["No speedup was validly measured (CPU timing is never valid): Fast@p for p > 0 is 0.", ""]
    lines += ["## Summary", ""]
    lines += _table(
        ["baseline", *(f"Fast@{p}" for p in THRESHOLDS), "geomean speedup"],
        [
            ["eager PyTorch", *_fast(s.fast_p), times(s.geomean_speedup)],
            ["torch.compile", *_fast(s.fast_p_compile), times(s.geomean_speedup_compile)],
        ],
    )
    lines += [
        f"Correct: {pct(s.correct_rate)} of tasks ({pct(s.generation_correct_rate)} of generations). "
        f"Hacked: {pct(s.hacked_rate)} of tasks ({pct(s.generation_hacked_rate)} of generations). "
        "Verdicts: " + ", ".join(f"{k} {v}" for k, v in s.verdicts.items()) + ".",
        "",
    ]
    if run.evaluation_seconds:
        e = run.evaluation_seconds
        lines += [
            f"Judge latency per evaluation: median {e['median']:.1f} s, p90 {e['p90']:.1f} s, max {e['max']:.1f} s.",
            "",
        ]
    lines += ["## By level", ""]
    lines += _table(
        ["level", "tasks", "correct", *(f"Fast@{p}" for p in THRESHOLDS)],
        [[lv.level, lv.tasks, pct(lv.correct_rate), *_fast(lv.fast_p)] for lv in s.levels],
    )
    lines += [
        "## Sequential test-time scaling",
        "",
        "Mean over samples; `last`: the latest generation by turn t (a history that ended earlier keeps "
        "its last), `best`: the best generation of turns 1..t.",
        "",
    ]
    lines += _table(
        ["turn", *(f"last Fast@{p}" for p in ("0", "1", "1.2")), *(f"best Fast@{p}" for p in ("0", "1", "1.2"))],
        [
            [t.turn, *(pct(t.last[p]) for p in ("0", "1", "1.2")), *(pct(t.best_so_far[p]) for p in ("0", "1", "1.2"))]
            for t in report.turns
        ],
    )
    lines += ["## Best of N", ""]
    lines += _table(["N", *(f"Fast@{p}" for p in THRESHOLDS)], [[b.n, *_fast(b.fast_p)] for b in report.best_of_n])
    b = report.baselines
    lines += ["## Baselines", ""]
    if b.status != "timed":
        lines += [f"Not timed ({b.status}): {b.reason}.", ""]
    else:
        lines += [f"On {b.device_name}: {b.method}." + (f" **{b.reason}.**" if b.reason else ""), ""]
        lines += _table(
            ["task", "eager us", "torch.compile us", "compile / eager", "compile s", "error"],
            [
                [
                    t.task,
                    f"{t.eager_us:.1f}" if t.eager_us else "-",
                    f"{t.compile_us:.1f}" if t.compile_us else "-",
                    f"{t.compile_over_eager:.3f}" if t.compile_over_eager else "-",
                    f"{t.compile_seconds:.1f}" if t.compile_seconds else "-",
                    t.error or "",
                ]
                for t in b.tasks
            ],
        )
    lines += ["## Tasks", ""]
    lines += _table(
        ["task", "gens", "verdict", "sample/turn", "speedup", "vs compile", "coverage", "reward", "hacked", "note"],
        [
            [
                t.task,
                t.generations,
                t.verdict,
                f"{t.sample}/{t.turn}" if t.sample is not None else "-",
                times(t.speedup),
                times(t.speedup_compile),
                pct(t.coverage),
                f"{t.reward:.3f}",
                t.hacked_generations,
                _cell("; ".join(t.hack_reasons) or t.error),
            ]
            for t in report.tasks
        ],
    )
    if run.policy_failures:
        lines += ["## Tasks the policy failed on", ""] + [f"- {_cell(line)}" for line in run.policy_failures] + [""]
    if report.skipped:
        lines += ["## Skipped lines", ""] + [f"- {_cell(line)}" for line in report.skipped] + [""]
    lines += ["## Plots", ""] + [f"![{title}]({file})" for file, title, _ in PLOTS] + [""]
    return "\n".join(lines)


def _cell(text: str, limit: int = 160) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 3] + "..."
