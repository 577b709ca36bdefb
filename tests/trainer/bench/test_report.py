"""The report from judged generations, without a sandbox: speedups over torch.compile from the
baselines' ratio, the summary, report.json (versioned), report.md, the plots, `drkernel
report OUT` and `drkernel report compare A B`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drkernel.cli import main
from drkernel.errors import InvalidArgument
from services.sandbox.tasks import builtin_task
from services.trainer.bench.report_files import write_all
from services.trainer.bench.schema import (
    Baselines,
    GenerationResult,
    Report,
    RunInfo,
    TaskBaseline,
    read_report,
    write_report,
)
from services.trainer.bench.summary import (
    best_of_n_points,
    summarize,
    task_rows,
    turn_points,
    with_compile_speedups,
)
from services.trainer.bench.tasks import BenchTask, TaskSet
from tests.trainer.bench.helpers import assert_png

TASKS = TaskSet(
    "builtin",
    [
        BenchTask(name, name, builtin_task(name).source(), int(name[1]))
        for name in ("l1_relu", "l1_gelu", "l2_gemm_bias_relu")
    ],
)


def result(task: str, sample: int, turn: int, verdict: str, speedup: float | None = None) -> GenerationResult:
    correct = verdict == "CORRECT"
    return GenerationResult(
        task=task,
        sample=sample,
        turn=turn,
        code_sha256=f"{task}{sample}{turn}",
        verdict=verdict,
        correct=correct,
        hacked=verdict == "HACKED",
        reward=0.5 + 0.5 * min(speedup or 0.0, 3.0) if correct else 0.0,
        speedup=speedup,
        speedup_compile=None,
        coverage=0.9 if correct else 0.0,
        hack_reasons=["no Triton kernel of its own ran"] if verdict == "HACKED" else [],
        device_name="NVIDIA H100 80GB HBM3",
        evaluation_seconds=5.0,
    )


def build(results: list[GenerationResult], baselines: Baselines) -> Report:
    results = with_compile_speedups(results, baselines)
    run = RunInfo(
        source="generations",
        generations_file="g.jsonl",
        task_set="builtin",
        settings={},
        sandboxes=[],
        started="2026-11-25T00:00:00+00:00",
        seconds={"judging": 1.0, "total": 2.0},
    )
    summary = summarize(TASKS, results, baselines, profile="strict", device="cuda:H100", seed=0, skipped_lines=0)
    return Report(
        run=run,
        summary=summary,
        turns=turn_points(TASKS, results),
        best_of_n=best_of_n_points(TASKS, results),
        baselines=baselines,
        tasks=task_rows(TASKS, results),
        generations=results,
    )


GPU_LIKE = [
    result("l1_relu", 0, 1, "HACKED"),
    result("l1_relu", 0, 2, "CORRECT", 1.6),
    result("l1_gelu", 0, 1, "CORRECT", 0.8),
    result("l1_gelu", 0, 2, "INCORRECT"),
]
TIMED = Baselines(
    status="timed",
    device_name="NVIDIA H100 80GB HBM3",
    method="test",
    tasks=[
        TaskBaseline(task="l1_relu", eager_us=100.0, compile_us=50.0),  # compile twice as fast: 1.6x -> 0.8x
        TaskBaseline(task="l1_gelu", eager_us=100.0, compile_us=None, error="torch.compile failed: ..."),
    ],
)


def test_speedups_over_torch_compile_and_the_summary() -> None:
    report = build(GPU_LIKE, TIMED)
    by_task = {t.task: t for t in report.tasks}
    assert by_task["l1_relu"].speedup_compile == pytest.approx(0.8)
    assert by_task["l1_gelu"].speedup_compile is None and by_task["l1_gelu"].speedup == 0.8
    assert by_task["l2_gemm_bias_relu"].verdict == "MISSING"
    s = report.summary
    assert s.fast_p == pytest.approx({"0": 2 / 3, "1": 1 / 3, "1.2": 1 / 3, "1.5": 1 / 3, "2": 0, "3": 0})
    assert s.fast_p_compile == pytest.approx({"0": 2 / 3, "1": 0, "1.2": 0, "1.5": 0, "2": 0, "3": 0})
    assert s.geomean_speedup == pytest.approx((1.6 * 0.8) ** 0.5)
    assert s.geomean_speedup_compile == pytest.approx(0.8)
    assert (s.correct_rate, s.hacked_rate, s.missing_tasks) == (pytest.approx(2 / 3), pytest.approx(1 / 3), 1)
    assert [(lv.level, lv.tasks, lv.correct_rate) for lv in s.levels] == [("1", 2, 1.0), ("2", 1, 0.0)]
    assert [(t.turn, t.last["1"], t.best_so_far["1"]) for t in report.turns] == [
        (1, 0.0, 0.0),
        (2, pytest.approx(1 / 3), pytest.approx(1 / 3)),
    ]
    skipped = build(GPU_LIKE, Baselines(status="skipped", reason="off"))
    assert skipped.summary.fast_p_compile is None and skipped.tasks[0].speedup_compile is None


def test_report_files_redraw_and_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    files = write_all(build(GPU_LIKE, TIMED), second)
    assert [f.name for f in files] == [
        "report.json",
        "report.md",
        "fast_p_turns.png",
        "best_of_n.png",
        "speedup_distribution.png",
        "levels.png",
    ]
    for path in files[2:]:
        assert_png(path)
    markdown = (second / "report.md").read_text()
    assert "| torch.compile | 66.7% | 0.0% |" in markdown and "torch.compile failed" in markdown
    assert read_report(second) == build(GPU_LIKE, TIMED)

    first.mkdir()
    write_report(build(GPU_LIKE[:1], Baselines(status="skipped", reason="off")), first)
    assert main(["report", str(first)]) == 0  # a benchmark's report drawn from its report.json
    assert_png(first / "levels.png")
    assert (first / "report.md").is_file()
    assert "3 tasks, 1 generations" in capsys.readouterr().out

    assert main(["report", "compare", str(first), str(second / "report.json")]) == 0
    text = capsys.readouterr().out
    assert "Fast@1 vs eager" in text and "+33.3 pt" in text
    assert "l1_relu  HACKED  ->  CORRECT 1.600x" in text and "task sets differ" not in text
    assert_png(second / "compare.png")

    fewer = build(GPU_LIKE, TIMED)
    write_report(fewer.model_copy(update={"tasks": fewer.tasks[:2]}), first)
    assert main(["report", "compare", str(first), str(second)]) == 0
    assert "note: the task sets differ (2 tasks in common)" in capsys.readouterr().out


def test_a_report_of_another_kind_or_version_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "report.json"
    data = json.loads(build(GPU_LIKE, TIMED).model_dump_json())
    path.write_text(json.dumps({**data, "version": 99}))
    with pytest.raises(InvalidArgument, match="report version 99"):
        read_report(path)
    path.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(InvalidArgument, match="not a drkernel bench report"):
        read_report(tmp_path)
    assert main(["report", "compare", str(tmp_path), str(tmp_path)]) == 2
    assert "not a drkernel bench report" in capsys.readouterr().err
