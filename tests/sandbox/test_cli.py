"""`drkernel eval` as a user runs it: exit codes, JSON on stdout, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sandbox.conftest import DATA

pytestmark = pytest.mark.slow  # the CLI against real servers

DRKERNEL = [sys.executable, "-m", "drkernel"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DRKERNEL, *args], capture_output=True, text=True, timeout=600)


def test_json_against_a_server_is_the_proto3_mapping_with_snake_case_names(sandbox):
    result = run(
        "eval",
        "--task",
        str(DATA / "relu_task.py"),
        "--candidate",
        str(DATA / "relu_triton.py"),
        "--server",
        sandbox.address,
        "--json",
        "--skip-timing",
    )
    assert result.returncode == 0, result.stderr
    response = json.loads(result.stdout)
    assert response["verdict"] == "VERDICT_CORRECT"
    assert response["furthest_stage"] == "STAGE_PROFILE"
    assert [s["status"] for s in response["stages"] if s["stage"] == "STAGE_TIMING"] == ["STAGE_STATUS_SKIPPED"]
    assert {"hack_reasons", "feedback", "checks", "timing", "speedup", "reward", "error"} <= response.keys()
    assert all("max_abs_error" in check for check in response["checks"])


def test_local_evaluation_without_a_server_prints_a_summary_and_exits_1_when_not_correct():
    result = run(
        "eval", "--task", str(DATA / "relu_task.py"), "--candidate", str(DATA / "relu_torch_only.py"), "--skip-timing"
    )
    assert result.returncode == 1
    assert "verdict  HACKED" in result.stdout and "no Triton kernel of its own ran" in result.stdout


def test_binary_candidate_is_refused_with_one_line(tmp_path: Path):
    binary = tmp_path / "candidate.py"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    result = run("eval", "--task", str(DATA / "relu_task.py"), "--candidate", str(binary))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "not UTF-8 text" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("task_text", "message"),
    [("import torch\n", "does not define Model"), ("class Model(:\n", "not valid Python")],
)
def test_bad_task_is_refused_locally_and_remotely_with_one_line(sandbox, tmp_path: Path, task_text, message):
    task = tmp_path / "task.py"
    task.write_text(task_text)
    for extra in ([], ["--server", sandbox.address]):
        result = run("eval", "--task", str(task), "--candidate", str(DATA / "relu_triton.py"), *extra)
        assert result.returncode == 2, result.stderr
        assert message in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_missing_file_and_unreachable_server():
    missing = run("eval", "--task", "/nonexistent/task.py", "--candidate", str(DATA / "relu_triton.py"))
    assert missing.returncode == 2 and "No such file or directory: /nonexistent/task.py" in missing.stderr
    down = run(
        "eval",
        "--task",
        str(DATA / "relu_task.py"),
        "--candidate",
        str(DATA / "relu_triton.py"),
        "--server",
        "127.0.0.1:1",
        "--timeout",
        "5",
    )
    assert down.returncode == 3 and "UNAVAILABLE" in down.stderr and "Traceback" not in down.stderr
