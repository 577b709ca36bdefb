"""`drkernel bench` and `drkernel report` refuse bad input with one line and exit status 2,
before starting anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drkernel.cli import main


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--generations", "absent.jsonl"], "no such file or folder: absent.jsonl"),
        (["--generations", "GEN", "--samples", "2"], "--samples, --turns and --model apply to a policy"),
        (["--tasks", "no/such/folder"], "neither 'builtin' nor a folder"),
        (["--levels", "one"], "--levels takes comma-separated integers"),
        (["--problems", "l9_nothing"], "no task 'l9_nothing'"),
        (["--samples", "0"], "--samples: Input should be greater than or equal to 1"),
        (["--sandbox", "dns:///sandbox:50051", "--sandbox", "other:50051"], "must be the only sandbox named"),
        (["--generations", "EMPTY"], "no line names a task that could be found"),
    ],
)
def test_bench_refuses_bad_input(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    generations = tmp_path / "g.jsonl"
    generations.write_text(json.dumps({"task": "l1_relu", "sample": 0, "turn": 1, "code": "x"}) + "\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"task": "nothing", "sample": 0, "turn": 1, "code": "x"}) + "\n")
    paths = {"GEN": str(generations), "EMPTY": str(empty)}
    code = main(["bench", *(paths.get(a, a) for a in args), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") <= 2, err
    assert not (tmp_path / "out").exists()  # nothing started, nothing written


def test_bench_refuses_a_file_as_its_out_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.json"
    out.write_text("{}")
    assert main(["bench", "--problems", "l1_relu", "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"drkernel: --out: {out} is a file; name a folder for the report\n"


def test_report_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "compare", str(tmp_path)]) == 2
    assert "usage: drkernel report RUN_DIR | drkernel report compare A B" in capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2
    assert "no metrics.jsonl (a training run) or report.json (a benchmark)" in capsys.readouterr().err


def test_report_still_draws_a_training_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"step": step, "reward_mean": 0.1 * step, "correct_rate": 0.05 * step} for step in (1, 2)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert main(["report", str(tmp_path)]) == 0
    assert "reward_mean" in capsys.readouterr().out and (tmp_path / "report" / "reward.png").is_file()
