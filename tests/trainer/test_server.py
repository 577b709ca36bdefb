"""TrainerService over a real gRPC server on loopback, launching a real process per run: a fake
of the training job (tests/trainer/data/fake_train.py) that keeps the job's contract in a
fraction of a second. Errors, the run life cycle (start, watch, stop, resume, fail, forced
kill, torchrun), torn metrics lines, checkpoints, a restarted server, health and metrics."""

from __future__ import annotations

import fcntl
import json
import shutil
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import prometheus_client
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from drkernel.channels import open_channel
from drkernel.sections import SecuritySettings, ServerSettings
from drkernel.v1 import trainer_pb2 as pb
from drkernel.v1 import trainer_pb2_grpc
from services.trainer.runs import LOCK_FILE, STATE_FILE, RunManager
from services.trainer.server import RunningTrainer, start_trainer
from services.trainer.servicer import SERVICE_NAME
from services.trainer.settings import TrainerSettings

from ..conftest import BackgroundLoop

FAKE_JOB = Path(__file__).with_name("data") / "fake_train.py"
TIMEOUT = 15  # seconds for any one call; far above what each needs


def trainer_settings(runs_dir: Path, **overrides: Any) -> TrainerSettings:
    base = TrainerSettings(
        server=ServerSettings(host="127.0.0.1", port=0, metrics_port=0),
        runs_dir=runs_dir,
        train_args=(str(FAKE_JOB),),
        poll_seconds=0.05,
        stop_grace_seconds=3,
    )
    return base.model_copy(update=overrides)


class Served:
    """A running trainer server and a blocking stub to it."""

    def __init__(self, running: RunningTrainer) -> None:
        self.running = running
        self.channel = grpc.insecure_channel(running.address)
        self.stub = trainer_pb2_grpc.TrainerServiceStub(self.channel)

    def start(self, name: str, steps: int, run_id: str = "") -> pb.StartRunResponse:
        return self.stub.StartRun(
            pb.StartRunRequest(config_yaml=f"name: {name}\nsteps: {steps}\n", run_id=run_id), timeout=TIMEOUT
        )

    def get(self, run_id: str) -> pb.Run:
        return self.stub.GetRun(pb.GetRunRequest(run_id=run_id), timeout=TIMEOUT).run

    def watch(self, run_id: str, from_step: int = 0) -> list[pb.StepMetrics]:
        request = pb.WatchRunRequest(run_id=run_id, from_step=from_step)
        return [response.metrics for response in self.stub.WatchRun(request, timeout=TIMEOUT)]

    def wait_for_step(self, run_id: str, step: int) -> None:
        stream = self.stub.WatchRun(pb.WatchRunRequest(run_id=run_id, from_step=step), timeout=TIMEOUT)
        next(stream)
        stream.cancel()

    def stop(self, run_id: str) -> pb.Run:
        return self.stub.StopRun(pb.StopRunRequest(run_id=run_id), timeout=TIMEOUT).run

    def checkpoints(self, run_id: str) -> list[pb.Checkpoint]:
        return list(self.stub.ListCheckpoints(pb.ListCheckpointsRequest(run_id=run_id), timeout=TIMEOUT).checkpoints)


@contextmanager
def serve(background_loop: BackgroundLoop, settings: TrainerSettings) -> Iterator[Served]:
    running = background_loop.run(start_trainer(settings, SecuritySettings()))
    served = Served(running)
    try:
        yield served
    finally:
        served.channel.close()
        background_loop.run(running.stop())


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="module")
def server(background_loop: BackgroundLoop, runs_dir: Path) -> Iterator[Served]:
    """One server for the module; each test leaves no run running (at most one may run)."""
    with serve(background_loop, trainer_settings(runs_dir)) as served:
        yield served


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (
            pb.StartRunRequest(config_yaml="rollout:\n  turns: 0\n"),
            "config_yaml: rollout.turns: Input should be greater than or equal to 1",
        ),
        (
            pb.StartRunRequest(config_yaml="rollout:\n  turnz: 2\n"),
            "config_yaml: rollout.turnz: Extra inputs are not permitted",
        ),
        (pb.StartRunRequest(config_yaml="steps: [1\n"), "config_yaml: not valid YAML"),
        (pb.StartRunRequest(config_yaml="- a\n"), "config_yaml: expected a mapping at the top level"),
        (pb.StartRunRequest(), "config_yaml is empty"),
        (pb.StartRunRequest(config_yaml="name: x\n", steps=0), "steps must be at least 1"),
        (pb.StartRunRequest(config_yaml="name: x\n", run_id="Has_Capitals"), "run_id 'Has_Capitals' must be"),
        (pb.StartRunRequest(config_yaml="name: x\n", run_id="x" * 64), "must be 1 to 63"),
        (pb.StartRunRequest(config_yaml="name: x\n", resume_from="any"), "not both"),
    ],
)
def test_bad_start_requests_are_invalid_argument(server: Served, request_: pb.StartRunRequest, message: str) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        server.stub.StartRun(request_, timeout=TIMEOUT)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in caught.value.details()


def test_unknown_runs_are_not_found(server: Served) -> None:
    stub = server.stub
    calls = [
        lambda: stub.GetRun(pb.GetRunRequest(run_id="nope"), timeout=TIMEOUT),
        lambda: stub.StopRun(pb.StopRunRequest(run_id="nope"), timeout=TIMEOUT),
        lambda: stub.ListCheckpoints(pb.ListCheckpointsRequest(run_id="nope"), timeout=TIMEOUT),
        lambda: list(stub.WatchRun(pb.WatchRunRequest(run_id="nope"), timeout=TIMEOUT)),
        lambda: stub.StartRun(pb.StartRunRequest(resume_from="nope"), timeout=TIMEOUT),
    ]
    for call in calls:
        with pytest.raises(grpc.RpcError) as caught:
            call()
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
        assert "no run 'nope'" in caught.value.details()


def test_a_run_to_its_end_streams_every_step_and_keeps_checkpoints(server: Served) -> None:
    started = server.start("complete", 3, run_id="complete")
    assert started.run_id == "complete" and Path(started.out_dir) == server.running.manager.runs_dir / "complete"
    steps = server.watch("complete")
    assert [m.step for m in steps] == [1, 2, 3]
    last = steps[-1]
    assert (last.reward_mean, last.correct_rate, last.weights_version, last.seconds_step) == (0.3, 0.5, 3, 4.0)
    assert (last.mrs_rejected_rate, last.prs_rejected_rate, last.veto_rate, last.logprob_mismatch) == (
        0.02,
        0.03,
        0.04,
        0.001,
    )
    assert (last.seconds_generating, last.seconds_evaluating, last.seconds_logprobs) == (1.0, 2.0, 0.5)
    assert (last.seconds_updating, last.seconds_syncing) == (0.25, 0.125)
    assert dict(last.extra) == {"reward_turn_1": 0.15}  # strings and booleans are dropped

    run = server.get("complete")
    assert run.state == pb.RUN_STATE_SUCCEEDED and run.error == ""
    assert (run.name, run.steps_done, run.steps_total) == ("complete", 3, 3)
    assert run.latest_metrics == last
    assert run.HasField("start_time") and run.finish_time.ToDatetime() >= run.start_time.ToDatetime()
    assert [m.step for m in server.watch("complete", from_step=3)] == [3]

    checkpoints = server.checkpoints("complete")
    assert [c.step for c in checkpoints] == [2, 3]  # the job keeps the newest two
    newest = checkpoints[-1]
    assert newest.path == f"{started.out_dir}/checkpoints/step_3" and newest.hf_path == f"{newest.path}/hf"
    assert newest.size_bytes == 1500 and newest.HasField("create_time")
    assert "complete" in [r.run_id for r in server.stub.ListRuns(pb.ListRunsRequest(), timeout=TIMEOUT).runs]
    assert server.stop("complete") == run  # an ended run is left as it is


@pytest.mark.slow
def test_stop_checkpoints_then_resume_continues(server: Served) -> None:
    started = server.start("slow", 1000, run_id="resumable")
    server.wait_for_step("resumable", 2)
    with (Path(started.out_dir) / LOCK_FILE).open() as lock, pytest.raises(BlockingIOError):
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the job holds it while it lives
    with pytest.raises(grpc.RpcError) as caught:
        server.stub.StartRun(pb.StartRunRequest(resume_from="resumable"), timeout=TIMEOUT)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "is running" in caught.value.details()
    with pytest.raises(grpc.RpcError) as caught:
        server.start("slow", 5, run_id="resumable")
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "exists" in caught.value.details()

    stopped = server.stop("resumable")
    assert stopped.state == pb.RUN_STATE_STOPPED and stopped.error == ""
    assert stopped.steps_done >= 2 and stopped.steps_total == 1000
    assert server.checkpoints("resumable")[-1].step == stopped.steps_done  # it checkpointed the step it finished

    target = stopped.steps_done + 2
    response = server.stub.StartRun(pb.StartRunRequest(resume_from="resumable", steps=target), timeout=TIMEOUT)
    assert response.run_id == "resumable"
    resumed = server.watch("resumable", from_step=stopped.steps_done + 1)
    assert [m.step for m in resumed] == [target - 1, target]
    run = server.get("resumable")
    assert (run.state, run.steps_done, run.steps_total) == (pb.RUN_STATE_SUCCEEDED, target, target)
    assert [m.step for m in server.watch("resumable")] == list(range(1, target + 1))


def refused_starts() -> float:
    """StartRun calls the server has answered RESOURCE_EXHAUSTED (it counts them just after
    answering, so a caller may be a moment ahead)."""
    labels = {"method": "/drkernel.v1.TrainerService/StartRun", "code": "RESOURCE_EXHAUSTED"}
    return prometheus_client.REGISTRY.get_sample_value("drkernel_rpc_total", labels) or 0.0


def counted(expected: float) -> float:
    """The count of refused starts once it reached ``expected`` and stayed a moment."""
    deadline = time.monotonic() + 5
    while refused_starts() < expected and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # time for retries, were there any
    return refused_starts()


def test_a_second_run_beyond_the_limit_is_refused_without_retry(server: Served) -> None:
    server.start("slow", 1000, run_id="occupying")
    try:
        before = refused_starts()
        with pytest.raises(grpc.RpcError) as caught:
            server.stub.StartRun(pb.StartRunRequest(config_yaml="name: another\n"), timeout=TIMEOUT)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "1 of at most 1 runs" in caught.value.details()
        assert ("grpc-retry-pushback-ms", "-1") in caught.value.trailing_metadata()
        assert counted(before + 1) == before + 1
        # A client that retries busy answers (drkernel.channels) takes -1 as "do not retry".
        with (
            open_channel(server.running.address, SERVICE_NAME, SecuritySettings()) as retrying,
            pytest.raises(grpc.RpcError),
        ):
            trainer_pb2_grpc.TrainerServiceStub(retrying).StartRun(
                pb.StartRunRequest(config_yaml="name: x\n"), timeout=TIMEOUT
            )
        assert counted(before + 2) == before + 2
    finally:
        assert server.stop("occupying").state == pb.RUN_STATE_STOPPED
    assert not (server.running.manager.runs_dir / "another").exists()


def test_a_failing_job_reports_its_error_line(server: Served) -> None:
    server.start("fail-at-3", 10, run_id="failing")
    assert [m.step for m in server.watch("failing")] == [1, 2]
    run = server.get("failing")
    assert run.state == pb.RUN_STATE_FAILED
    assert run.error == "exited with code 1: drkernel: fake failure at step 3"
    assert run.steps_done == 2 and run.latest_metrics.step == 2


def test_torn_and_malformed_metrics_lines_are_survived(server: Served) -> None:
    server.start("torn", 2, run_id="torn")
    steps = server.watch("torn")
    assert [(m.step, m.reward_mean) for m in steps] == [(1, 0.1), (2, 0.2)]
    run = server.get("torn")
    assert run.state == pb.RUN_STATE_SUCCEEDED and run.steps_done == 2  # the unfinished last line is skipped


@pytest.mark.slow
def test_a_job_that_ignores_sigterm_is_killed_with_its_children(server: Served) -> None:
    started = server.start("stubborn", 1000, run_id="stubborn")
    server.wait_for_step("stubborn", 1)
    child = int((Path(started.out_dir) / "child.pid").read_text())
    begun = time.monotonic()
    run = server.stop("stubborn")
    assert 2.5 < time.monotonic() - begun < 10
    assert run.state == pb.RUN_STATE_STOPPED and run.error == "did not exit within 3 s of SIGTERM; killed"
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the job's child in a session of its own survived"


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie (nobody may reap orphans in a container)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_health_and_metrics(server: Served) -> None:
    health = health_pb2_grpc.HealthStub(server.channel).Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME))
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    server.start("metered", 3, run_id="metered")
    server.watch("metered")
    port = server.running.server.metrics_port
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    assert 'drkernel_trainer_reward_mean{run="metered"} 0.3' in text
    assert 'drkernel_trainer_weights_version{run="metered"} 3.0' in text
    assert 'drkernel_trainer_phase_seconds{phase="evaluating",run="metered"} 2.0' in text
    assert 'drkernel_trainer_step_extra{key="reward_turn_1",run="metered"} 0.15' in text
    assert 'drkernel_trainer_runs_finished_total{state="succeeded"}' in text
    assert 'drkernel_rpc_total{code="OK",method="/drkernel.v1.TrainerService/StartRun"}' in text


def test_a_restarted_server_takes_in_the_runs_it_finds(background_loop: BackgroundLoop, tmp_path: Path) -> None:
    with serve(background_loop, trainer_settings(tmp_path)) as served:
        served.start("done", 2, run_id="done")
        served.watch("done")
    orphan = tmp_path / "orphan"  # running when its server went away
    orphan.mkdir()
    (orphan / STATE_FILE).write_text(
        json.dumps({"name": "orphan", "state": "running", "steps_total": 5, "started": "2025-01-01T00:00:00+00:00"})
    )
    (orphan / "metrics.jsonl").write_text('{"step": 1, "reward_mean": 0.5}\n{"step": 2, "rew')
    survivor = tmp_path / "survivor"  # its process outlived its server and still runs
    shutil.copytree(tmp_path / "done", survivor)
    (survivor / STATE_FILE).write_text(json.dumps({"name": "survivor", "state": "running", "steps_total": 9}))
    (tmp_path / "stray").mkdir()  # not a run: no run.json

    held = (survivor / LOCK_FILE).open("w")
    fcntl.flock(held, fcntl.LOCK_EX)  # as the job's process would
    with held, serve(background_loop, trainer_settings(tmp_path)) as served:
        runs = {r.run_id: r for r in served.stub.ListRuns(pb.ListRunsRequest(), timeout=TIMEOUT).runs}
        assert set(runs) == {"done", "orphan", "survivor"}
        assert (runs["done"].state, runs["done"].steps_done) == (pb.RUN_STATE_SUCCEEDED, 2)
        assert (runs["orphan"].state, runs["orphan"].steps_done) == (pb.RUN_STATE_FAILED, 1)
        assert "stopped while the run was running" in runs["orphan"].error
        assert runs["survivor"].state == pb.RUN_STATE_FAILED and "still runs unsupervised" in runs["survivor"].error
        for run_id, reason in (("orphan", "no complete checkpoint"), ("survivor", "still runs unsupervised")):
            with pytest.raises(grpc.RpcError) as caught:
                served.stub.StartRun(pb.StartRunRequest(resume_from=run_id), timeout=TIMEOUT)
            assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert reason in caught.value.details()
        with pytest.raises(grpc.RpcError) as caught:
            served.start("x", 1, run_id="stray")
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "is no run" in caught.value.details()
        fcntl.flock(held, fcntl.LOCK_UN)  # its process is gone: now it resumes
        served.stub.StartRun(pb.StartRunRequest(resume_from="survivor", steps=3), timeout=TIMEOUT)
        assert [m.step for m in served.watch("survivor", from_step=3)] == [3]


@pytest.mark.slow
def test_under_torchrun_a_stop_reaches_every_rank_and_is_clean(background_loop: BackgroundLoop, tmp_path: Path) -> None:
    """torchrun passes SIGTERM on to its workers (in sessions of their own) and then exits
    nonzero itself; the run is still a clean stop, and no rank is left behind. The grace is
    long enough for ranks that checkpoint on a loaded machine (a stop ends when they exit)."""
    with serve(background_loop, trainer_settings(tmp_path, nproc_per_node=2, stop_grace_seconds=20)) as served:
        started = served.start("slow", 1000, run_id="ranks")
        served.wait_for_step("ranks", 2)
        run = served.stop("ranks")
        assert (run.state, run.error) == (pb.RUN_STATE_STOPPED, "")
        assert served.checkpoints("ranks")[-1].step == run.steps_done
    assert not processes_mentioning(started.out_dir)


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and alive(int(entry.name)) and text.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_several_processes_per_run_go_through_torchrun(tmp_path: Path) -> None:
    manager = RunManager(trainer_settings(tmp_path, nproc_per_node=4, python=Path("/opt/py/bin/python")))
    assert manager.command(["--resume", "/runs/x"]) == [
        "/opt/py/bin/python",
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=4",
        str(FAKE_JOB),
        "--resume",
        "/runs/x",
    ]
    plain = RunManager(trainer_settings(tmp_path, train_args=("-m", "drkernel", "train")))
    assert plain.command(["--config", "c.yaml", "--out", "o"]) == [
        sys.executable,
        "-m",
        "drkernel",
        "train",
        "--config",
        "c.yaml",
        "--out",
        "o",
    ]


@pytest.mark.slow
def test_the_real_training_job_runs_through_the_service(
    background_loop: BackgroundLoop, tmp_path: Path, tiny_policy_dir: Path
) -> None:
    """StartRun launches `drkernel train` itself (tiny random policy, token-target reward);
    WatchRun streams its steps and ListCheckpoints finds its checkpoint and HF export."""
    settings = TrainerSettings(
        server=ServerSettings(host="127.0.0.1", port=0, metrics_port=0),
        runs_dir=tmp_path,
        poll_seconds=0.1,
    )
    config = {
        "name": "real",
        "steps": 2,
        "model": str(tiny_policy_dir),
        "tasks": {"train": ["l1_relu"]},
        "environment": {"kind": "token_target", "target_token_ids": list(range(0, 49152, 2))},
        "rollout": {"tasks_per_step": 1, "samples_per_task": 4, "turns": 2, "max_tokens": 4, "device": "cpu"},
        "checkpoint": {"every_steps": 2},
    }
    with serve(background_loop, settings) as served:
        served.stub.StartRun(pb.StartRunRequest(config_yaml=json.dumps(config), run_id="real"), timeout=TIMEOUT)
        request = pb.WatchRunRequest(run_id="real")
        steps = [r.metrics for r in served.stub.WatchRun(request, timeout=300)]
        run = served.get("real")
        assert run.state == pb.RUN_STATE_SUCCEEDED, run.error
        assert [m.step for m in steps] == [1, 2] and [m.weights_version for m in steps] == [1, 2]
        assert all(0 <= m.reward_mean <= 1 and m.logprob_mismatch < 1e-3 for m in steps)
        assert "reward_turn_2" in steps[-1].extra
        (checkpoint,) = served.checkpoints("real")
        assert checkpoint.step == 2 and (Path(checkpoint.hf_path) / "model.safetensors").is_file()
