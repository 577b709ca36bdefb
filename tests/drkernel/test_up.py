"""`drkernel up` end to end: sandbox, profiler, policy (a tiny random model) and trainer as four
processes on loopback with TLS and the token, configured by one settings file; the profiler
reaches the sandbox, a training step runs across them over gRPC (StartRun, then WatchRun until
step 1), the weights it pushed are served by the policy process, and SIGTERM stops them all."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from drkernel.channels import open_channel
from drkernel.cli import EXIT_USAGE, main
from drkernel.v1 import policy_pb2, policy_pb2_grpc, profiler_pb2, profiler_pb2_grpc, sandbox_pb2, trainer_pb2_grpc
from drkernel.v1 import trainer_pb2 as pb
from tests.certificates import Certificates
from tests.sandbox.conftest import source

TIMEOUT = 300


def free_ports(count: int) -> list[int]:
    """Ports nothing listens on now (the OS picks them; a moment later they are still free)."""
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def settings_file(directory: Path, model: Path, certificates: Certificates) -> tuple[Path, dict[str, int]]:
    """One settings file for the four services, as the manifests' ConfigMap holds them."""
    ports = dict(zip(("sandbox", "profiler", "policy", "trainer"), free_ports(4), strict=True))
    security = certificates.security().model_dump(mode="json", exclude_none=True)
    settings: dict[str, Any] = {
        "security": security,
        "sandbox": {"device": "cpu", "cpu_workers": 1, "warm_candidates": 1, "work_dir": str(directory / "sandbox")},
        "policy": {
            "backend": "transformers",
            "model": str(model),
            "device": "cpu",
            "dtype": "float32",
            "cache_dir": str(directory / "cache"),
        },
        "trainer": {"runs_dir": str(directory / "runs"), "poll_seconds": 0.2},
    }
    for name, port in ports.items():
        settings.setdefault(name, {})["server"] = {"port": port, "metrics": False}
    path = directory / "drkernel.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path, ports


def read_lines(stream: Any, lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


def test_up_needs_a_fixed_port_for_every_service(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DRKERNEL_POLICY__SERVER__PORT", "0")
    assert main(["up"]) == EXIT_USAGE
    assert capsys.readouterr().err == "drkernel: up needs a fixed port for every service: policy.server.port is 0\n"


@pytest.mark.slow  # four services and a training job start as processes
def test_four_processes_run_a_training_step(tmp_path: Path, tiny_policy_dir: Path, certificates: Certificates) -> None:
    config, ports = settings_file(tmp_path, tiny_policy_dir, certificates)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRKERNEL_")}
    up = subprocess.Popen(
        [sys.executable, "-m", "drkernel", "--config", str(config), "up", "--ready-timeout", str(TIMEOUT)],
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "up.log").open("w"),
        text=True,
        env=env,
        start_new_session=True,
    )
    printed: queue.Queue[str] = queue.Queue()
    threading.Thread(target=read_lines, args=(up.stdout, printed), daemon=True).start()
    try:
        lines = []
        while not lines or not lines[-1].startswith("serving;"):
            lines.append(printed.get(timeout=TIMEOUT))
        assert lines[:4] == [f"{name:<8}  127.0.0.1:{port}\n" for name, port in ports.items()]
        address = {name: f"127.0.0.1:{port}" for name, port in ports.items()}
        security = certificates.security()

        with open_channel(address["profiler"], "drkernel.v1.ProfilerService", security) as channel:
            profile = profiler_pb2_grpc.ProfilerServiceStub(channel).Profile(
                profiler_pb2.ProfileRequest(
                    reference_source=source("relu_task.py"), candidate_source=source("relu_syntax_error.py")
                ),
                timeout=TIMEOUT,
            )
        assert profile.verdict == sandbox_pb2.VERDICT_SYNTAX_ERROR  # judged by the sandbox process

        run = {
            "name": "up",
            "steps": 1,
            "model": str(tiny_policy_dir),
            "tasks": {"train": ["l1_relu"]},
            "environment": {"kind": "token_target", "target_token_ids": list(range(0, 49152, 2))},
            "rollout": {"tasks_per_step": 1, "samples_per_task": 2, "turns": 1, "max_tokens": 4, "device": "cpu"},
            "sync": {"mode": "grpc_stream"},
            "checkpoint": {"export_hf": False},
            "services": {"policy": address["policy"], "sandbox": address["sandbox"]},
        }
        with open_channel(address["trainer"], "drkernel.v1.TrainerService", security) as channel:
            trainer = trainer_pb2_grpc.TrainerServiceStub(channel)
            trainer.StartRun(pb.StartRunRequest(config_yaml=json.dumps(run), run_id="up"), timeout=TIMEOUT)
            steps = [r.metrics for r in trainer.WatchRun(pb.WatchRunRequest(run_id="up"), timeout=TIMEOUT)]
            finished = trainer.GetRun(pb.GetRunRequest(run_id="up"), timeout=TIMEOUT).run
        assert finished.state == pb.RUN_STATE_SUCCEEDED, finished.error
        assert [(m.step, m.weights_version) for m in steps] == [(1, 1)]
        with open_channel(address["policy"], "drkernel.v1.PolicyService", security) as channel:
            served = policy_pb2_grpc.PolicyServiceStub(channel).GetModelInfo(
                policy_pb2.GetModelInfoRequest(), timeout=TIMEOUT
            )
        assert served.weights_version == 1  # the step's weights reached the policy process

        up.send_signal(signal.SIGTERM)
        assert up.wait(TIMEOUT) == 0
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)
            up.wait()
    for port in ports.values():
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
    output = (tmp_path / "up.log").read_text().splitlines()
    for name in ports:  # each stopped gracefully, and said so
        assert any(line.startswith(f"{name:<8}| ") and '"event": "stopped"' in line for line in output), name
