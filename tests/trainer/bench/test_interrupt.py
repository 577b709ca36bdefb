"""Ctrl-C in the middle of `drkernel bench` (SIGINT to its whole process group, as a terminal
sends it, so the local sandbox's processes get it too): exit status 130, one line saying how
to resume and no traceback; the same command then judges only what was not cached."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from drkernel.cli import main
from services.sandbox.server.servicer import RunningSandbox
from services.sandbox.tasks import builtin_task
from services.trainer.bench.schema import read_report

pytestmark = [pytest.mark.slow, pytest.mark.heavy]

ROOT = Path(__file__).parents[3]
HACKS = ROOT / "tests" / "sandbox" / "hacks"


def _generations(path: Path) -> list[str]:
    """Four kernels of l1_relu, and the verdicts they get."""
    honest = (builtin_task("l1_relu").solution or Path()).read_text()
    codes = {
        "CORRECT": honest,
        "INCORRECT": honest.replace("tl.where(x < 0.0, 0.0, x)", "tl.where(x < 0.5, 0.0, x)"),
        "HACKED": (HACKS / "add_zero_buffer.py").read_text(),
        "COMPILE_ERROR": (HACKS / "python_in_kernel_exec.py").read_text(),
    }
    lines = [{"task": "l1_relu", "sample": s, "turn": 1, "code": code} for s, code in enumerate(codes.values())]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return list(codes)


def _default_sigint() -> None:  # a background job may have inherited SIGINT ignored
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_an_interrupted_bench_resumes(
    sandbox: RunningSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    generations, out = tmp_path / "g.jsonl", tmp_path / "out"
    verdicts = _generations(generations)  # judged two at a time (the local sandbox's two workers)
    flags = ["--generations", str(generations), "--out", str(out), "--json"]
    bench = subprocess.Popen(
        [sys.executable, "-m", "drkernel", "bench", *flags],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_default_sigint,
    )
    cache = out / "cache.jsonl"
    deadline = time.monotonic() + 300
    while not (cache.is_file() and cache.read_text().count("\n") >= 1):
        assert bench.poll() is None and time.monotonic() < deadline, bench.communicate()
        time.sleep(0.2)
    time.sleep(2)  # the next evaluations are well under way
    os.killpg(bench.pid, signal.SIGINT)
    _, err = bench.communicate(timeout=120)
    assert bench.returncode == 130, err
    assert "Traceback" not in err and err.rstrip().endswith("the same command resumes"), err
    cached = cache.read_text().count("\n")
    assert 1 <= cached < len(verdicts)

    assert main(["bench", *flags, "--sandbox", sandbox.address]) == 0
    summary = json.loads(capsys.readouterr().out)
    report = read_report(out)
    assert (report.run.evaluations_reused, report.run.evaluations_judged) == (cached, len(verdicts) - cached)
    assert [g.verdict for g in report.generations] == verdicts
    assert (summary["correct_rate"], summary["hacked_rate"], summary["generation_correct_rate"]) == (1.0, 1.0, 0.25)
