"""drkernel bench end to end: the example generations file (honest, wrong and hacked kernels
over three tasks, with malformed lines) judged by the real sandbox on loopback; its summary
against the expected one (verdicts the judge gives, counts and rates they determine, never
speedups); a rerun in the same OUT judging nothing; a KernelBench run folder converted; the
report's files, its plots and the comparison of two reports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from drkernel.cli import main
from services.sandbox.server.servicer import RunningSandbox
from services.sandbox.tasks import builtin_task
from services.trainer.bench.metrics import THRESHOLDS
from services.trainer.bench.run import module_of
from services.trainer.bench.schema import read_report
from tests.trainer.bench.helpers import assert_png

pytestmark = pytest.mark.slow

DATA = Path(__file__).parents[1] / "data" / "bench"


def bench(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, Any], str]:
    code = main(["bench", *args, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out), captured.err


def test_the_example_generations_file(
    sandbox: RunningSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for name in ("l1_relu", "l1_leaky_relu", "l1_swish"):
        shutil.copy(builtin_task(name).path, tasks)
    out = tmp_path / "out"
    flags = ["--generations", str(DATA / "generations.jsonl"), "--tasks", str(tasks), "--sandbox", sandbox.address]
    summary, errors = bench(capsys, *flags, "--out", str(out))
    expected = json.loads((DATA / "expected.json").read_text())

    for key, value in expected["summary"].items():
        assert summary[key] == pytest.approx(value), key
    assert summary["fast_p"]["0"] == pytest.approx(expected["fast_p_0"])
    for line in expected["skipped_lines"]:
        assert f"generations.jsonl:{line}:" in errors
    report = read_report(out)
    rows = {t.task: t for t in report.tasks}
    for task, fields in expected["tasks"].items():
        for key, value in fields.items():
            assert getattr(rows[task], key) == value, (task, key)
    assert any("no Triton kernel of its own" in reason for reason in rows["l1_relu"].hack_reasons)
    for point in report.turns:
        want = expected["turns_fast_p_0"][str(point.turn)]
        assert (point.last["0"], point.best_so_far["0"]) == pytest.approx((want["last"], want["best_so_far"]))
    assert {str(b.n): b.fast_p["0"] for b in report.best_of_n} == pytest.approx(expected["best_of_n_fast_p_0"])
    assert report.run.evaluations_judged == expected["evaluations_judged"]  # the repeated hack is judged once

    # What the verdicts determine whatever the device: Fast@p over all tasks from the chosen
    # generations, never increasing with p, Fast@0 the correct rate, nothing fast without timing.
    fast = summary["fast_p"]
    assert list(fast) == list(THRESHOLDS)
    for p in THRESHOLDS:
        share = sum(t.correct and (p == "0" or (t.speedup or 0.0) > float(p)) for t in report.tasks) / len(rows)
        assert fast[p] == pytest.approx(share)
    assert [fast[p] for p in THRESHOLDS] == sorted(fast.values(), reverse=True)
    assert fast["0"] == summary["correct_rate"]
    if not summary["timing_valid"]:
        assert all(fast[p] == 0.0 for p in THRESHOLDS[1:]) and summary["geomean_speedup"] is None
    for generation in report.generations:  # a hacked or wrong kernel is never correct
        assert generation.correct == (generation.verdict == "CORRECT") and not (
            generation.correct and generation.hacked
        )
    assert report.baselines.status == "skipped" and "cpu" in report.baselines.reason

    markdown = (out / "report.md").read_text()
    assert "| l1_leaky_relu | 1 | INCORRECT |" in markdown and "generations.jsonl:9: repeats" in markdown
    for name in ("fast_p_turns.png", "best_of_n.png", "speedup_distribution.png", "levels.png"):
        assert_png(out / name)

    # A rerun in the same OUT judges nothing and reports the same numbers.
    again, _ = bench(capsys, *flags, "--out", str(out))
    rerun = read_report(out)
    assert rerun.run.evaluations_judged == 0 and rerun.run.evaluations_reused == len(report.generations)
    assert again == summary
    first = tmp_path / "first"
    first.mkdir()
    shutil.copy(out / "report.json", first)

    # KernelBench's layout: a checkout and a runs/<name> folder; the honest ReLU, the module the
    # example's raw answer holds, on the same task source: answered from the cache.
    checkout = tmp_path / "kb" / "KernelBench" / "level1"
    checkout.mkdir(parents=True)
    shutil.copy(builtin_task("l1_relu").path, checkout / "19_ReLU.py")
    run = tmp_path / "runs" / "example"
    run.mkdir(parents=True)
    honest = json.loads((DATA / "generations.jsonl").read_text().splitlines()[1])["code"]
    (run / "level_1_problem_19_sample_0_kernel.py").write_text(module_of(honest))
    converted, _ = bench(
        capsys,
        "--generations",
        str(run),
        "--tasks",
        str(tmp_path / "kb"),
        "--sandbox",
        sandbox.address,
        "--out",
        str(out),
    )
    assert (converted["tasks"], converted["generations"], converted["correct_rate"]) == (1, 1, 1.0)
    assert read_report(out).run.evaluations_judged == 0
    written = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert [(g["task"], g["sample"], g["turn"]) for g in written] == [("level1/19", 0, 1)]

    # Two reports compared: the table and its plot.
    assert main(["report", "compare", str(first), str(out), "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "Fast@0 vs eager" in text and "+66.7 pt" in text  # 1/3 of tasks correct, then 1/1
    assert "l1_relu" in text and "(absent)" in text
    assert_png(tmp_path / "compare.png")


def test_a_policy_refines_over_turns(
    sandbox: RunningSandbox, tiny_policy_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The policy path (a tiny random model served here, the training rollout, the best-reward
    history window): N samples x T turns per task become generations, reported per turn and
    per N, and written out as a generations file."""
    out = tmp_path / "out"
    summary, _ = bench(
        capsys,
        "--model",
        str(tiny_policy_dir),
        "--problems",
        "l1_relu",
        "--samples",
        "2",
        "--turns",
        "2",
        "--max-tokens",
        "8",
        "--sandbox",
        sandbox.address,
        "--out",
        str(out),
    )
    report = read_report(out)
    assert (summary["tasks"], summary["generations"]) == (1, 4)
    assert report.run.source == "policy" and report.run.policy == "embedded" and report.run.policy_failures == []
    assert [(g.sample, g.turn) for g in report.generations] == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert [t.turn for t in report.turns] == [1, 2] and [b.n for b in report.best_of_n] == [1, 2]
    written = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert [(g["task"], g["sample"], g["turn"]) for g in written] == [("l1_relu", s, t) for s in (0, 1) for t in (1, 2)]


def test_a_policy_that_answers_no_task_is_an_error(
    sandbox: RunningSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing listens at the policy's address: every task fails, and a report of zeros with
    exit status 0 would pass for a measurement."""
    flags = ["--policy", "127.0.0.1:1", "--problems", "l1_relu", "--sandbox", sandbox.address]
    assert main(["bench", *flags, "--out", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert "no generations for l1_relu: the policy answered UNAVAILABLE" in err
    assert err.endswith("drkernel: the policy failed on every task: nothing was measured\n")
