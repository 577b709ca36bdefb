"""`drkernel train --auto-resume` and `--metrics-port`, as the training job on Kubernetes runs
them: a restart resumes from the run's last complete checkpoint or, without one, starts fresh
from --config; rank 0 serves the step gauges on the metrics port while it trains."""

from __future__ import annotations

import json
import socket
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from drkernel.cli import main


def write_config(directory: Path, model_dir: Path) -> Path:
    path = directory / "run.yaml"
    config = {
        "name": "auto-resume-test",
        "seed": 5,
        "steps": 1,
        "model": str(model_dir),
        "tasks": {"train": ["l1_relu", "l1_gelu"]},
        "environment": {"kind": "token_target", "target_token_ids": list(range(0, 49152, 3))},
        "rollout": {"tasks_per_step": 1, "samples_per_task": 2, "turns": 1, "max_tokens": 4, "device": "cpu"},
        "optim": {"lr": 1e-2, "micro_batch_rows": 4},
        "checkpoint": {"every_steps": 1, "keep": 2, "export_hf": False},
    }
    path.write_text(yaml.safe_dump(config))
    return path


def records(out: Path, name: str = "metrics.jsonl") -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / name).read_text().splitlines() if line.strip()]


def checkpoints(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "checkpoints").iterdir() if not p.name.startswith("."))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Scraper:
    """Scrapes a /metrics endpoint until it shows ``step`` of ``run`` and keeps that scrape."""

    def __init__(self, port: int, run: str, step: int) -> None:
        self.url, self.run, self.step = f"http://127.0.0.1:{port}/metrics", run, step
        self.samples: dict[tuple[str, str], float] = {}  # (name, run label): value
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._scrape, daemon=True)

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(10)

    def _scrape(self) -> None:
        while not self._done.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=5) as answer:
                    text = answer.read().decode()
            except OSError:  # not serving yet
                self._done.wait(0.02)
                continue
            samples = {
                (s.name, s.labels.get("run", "")): s.value
                for family in text_string_to_metric_families(text)
                for s in family.samples
            }
            if samples.get(("drkernel_trainer_step", self.run)) == self.step:
                self.samples = samples
                return
            self._done.wait(0.02)


@pytest.mark.slow  # two tiny real training runs
def test_a_restarted_job_starts_fresh_without_a_checkpoint_then_resumes_from_one(
    tiny_policy_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, out = write_config(tmp_path, tiny_policy_dir), tmp_path / "recipe"
    train = ["train", "--config", str(config), "--out", str(out), "--auto-resume"]
    # An earlier attempt recorded a step but died before its checkpoint: neither --config (the
    # directory holds a run) nor --resume (no checkpoint) restarts it; --auto-resume starts fresh.
    out.mkdir()
    earlier = {"step": 1, "reward_mean": -7.0}
    (out / "metrics.jsonl").write_text(json.dumps(earlier) + "\n")
    assert main(["train", "--config", str(config), "--out", str(out)]) == 2
    assert main(["train", "--resume", str(out)]) == 2
    capsys.readouterr()
    assert main(train) == 0
    printed = capsys.readouterr().out
    assert f"auto-resume: {out} has records but no complete checkpoint; starting fresh from {config}" in printed
    first = records(out)
    assert [r["step"] for r in first] == [1] and first[0]["reward_mean"] != earlier["reward_mean"]
    assert records(out, "metrics.discarded.jsonl") == [earlier]
    assert checkpoints(out) == ["step_1"]

    # Restarted again, it resumes from step_1 and counts on, serving its gauges meanwhile.
    port = free_port()
    with Scraper(port, out.name, step=2) as scraper:
        assert main([*train, "--steps", "2", "--metrics-port", str(port)]) == 0
    printed = capsys.readouterr().out
    assert f"auto-resume: resuming {out} from its checkpoint step_1" in printed
    assert "trained to step 2" in printed
    after = records(out)
    assert [r["step"] for r in after] == [1, 2] and after[0] == first[0]  # step 1 was not done again
    assert checkpoints(out) == ["step_1", "step_2"]

    assert scraper.samples, "the metrics port never showed step 2"
    assert scraper.samples[("drkernel_trainer_active_runs", "")] == 1
    assert scraper.samples[("drkernel_trainer_reward_mean", out.name)] == pytest.approx(after[1]["reward_mean"])
    assert scraper.samples[("drkernel_trainer_weights_version", out.name)] == 2
    with pytest.raises(OSError):  # the endpoint closes with the run
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--resume", "RUN", "--auto-resume"], "--auto-resume goes with --config and --out"),
        (["--config", "RUN/c.yaml", "--out", "RUN", "--metrics-port", "0"], "--metrics-port must be a port number"),
    ],
)
def test_bad_flags_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert main(["train", *(a.replace("RUN", str(tmp_path)) for a in extra)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
