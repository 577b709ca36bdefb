"""A training run killed with SIGKILL mid-run resumes from its last complete checkpoint and
continues exactly as a run that was never interrupted: same tasks, same samples, same rewards
(rollouts are seeded per request, the learner's state and the task cursor are checkpointed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.trainer.loop import train
from services.trainer.run_config import RunConfig

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # a real run killed and resumed

STEPS = 6


def run_config(model_dir: Path) -> dict[str, Any]:
    return {
        "name": "resume-test",
        "seed": 3,
        "steps": STEPS,
        "model": str(model_dir),
        "tasks": {"train": ["l1_relu", "l1_gelu", "l1_swish"]},
        "environment": {"kind": "token_target", "target_token_ids": list(range(0, 49152, 3))},
        "rollout": {"tasks_per_step": 2, "samples_per_task": 4, "turns": 1, "max_tokens": 6, "device": "cpu"},
        "loss": {"scale": 1.0},
        "optim": {"lr": 1e-2, "micro_batch_rows": 8},
        "checkpoint": {"every_steps": 2, "keep": 2, "export_hf": False},
    }


def by_step(out: Path) -> dict[int, dict[str, Any]]:
    """The last record of every step (a resumed run records the steps after its checkpoint again)."""
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return {r["step"]: r for r in records}


def wait_for_steps(out: Path, steps: int, process: subprocess.Popen[bytes], timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        if (out / "metrics.jsonl").exists() and len(by_step(out)) >= steps:
            return
        time.sleep(0.1)
    raise TimeoutError(f"the run did not reach step {steps}")


def test_a_killed_run_resumes_where_its_checkpoint_left_off(tiny_policy_dir: Path, tmp_path: Path) -> None:
    data = run_config(tiny_policy_dir)
    assert train(RunConfig.model_validate(data), tmp_path / "whole", progress=False) == STEPS
    whole = by_step(tmp_path / "whole")

    config_file, out = tmp_path / "run.yaml", tmp_path / "killed"
    config_file.write_text(yaml.safe_dump(data))
    command = [sys.executable, "-m", "drkernel", "train", "--config", str(config_file), "--out", str(out)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_for_steps(out, 3, process)  # step 2 is checkpointed, step 3 is done, step 4 is under way
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert sorted(p.name for p in (out / "checkpoints").iterdir() if not p.name.startswith(".")) == ["step_2"]

    resumed = subprocess.run(
        [sys.executable, "-m", "drkernel", "train", "--resume", str(out)], capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    again = by_step(out)
    assert sorted(again) == list(range(1, STEPS + 1))
    for step in range(3, STEPS + 1):
        assert again[step]["reward_mean"] == pytest.approx(whole[step]["reward_mean"], abs=1e-12), step
        assert again[step]["update_loss"] == pytest.approx(whole[step]["update_loss"], rel=1e-5), step
