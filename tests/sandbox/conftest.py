"""A real sandbox server on loopback, shared by the sandbox tests, and helpers to call it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from drkernel.config import SandboxSettings, ServerSettings
from drkernel.v1 import sandbox_pb2 as pb
from drkernel.v1 import sandbox_pb2_grpc
from services.sandbox.server import RunningSandbox, start_sandbox
from tests.conftest import BackgroundLoop

DATA = Path(__file__).parent / "data"


def source(name: str) -> str:
    """A test data file's text."""
    return (DATA / name).read_text()


def sandbox_settings(work_dir: Path, **overrides: object) -> SandboxSettings:
    """Settings for a test server: loopback ports chosen by the OS, CPU workers, short limits."""
    base = SandboxSettings(
        server=ServerSettings(host="127.0.0.1", port=0, metrics_port=0),
        device="cpu",
        cpu_workers=2,
        default_timeout_seconds=120,
        work_dir=work_dir,
    )
    return base.model_copy(update=overrides)


@pytest.fixture(scope="session")
def sandbox(background_loop: BackgroundLoop, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSandbox]:
    running = background_loop.run(start_sandbox(sandbox_settings(tmp_path_factory.mktemp("sandbox"))))
    yield running
    background_loop.run(running.stop())


@pytest.fixture(scope="session")
def sandbox_stub(sandbox: RunningSandbox) -> Iterator[sandbox_pb2_grpc.SandboxServiceStub]:
    with grpc.insecure_channel(sandbox.address) as channel:
        yield sandbox_pb2_grpc.SandboxServiceStub(channel)


def evaluate(stub: sandbox_pb2_grpc.SandboxServiceStub, task: str, candidate: str, **options: object) -> pb.EvaluateResponse:
    """Judges a candidate (file names in data/ or source text) with timing skipped by default."""
    task_source = source(task) if task.endswith(".py") else task
    candidate_source = source(candidate) if candidate.endswith(".py") else candidate
    request = pb.EvaluateRequest(
        request_id=candidate[:64], reference_source=task_source, candidate_source=candidate_source,
        options=pb.EvaluateOptions(**{"skip_timing": True, **options}),
    )
    return stub.Evaluate(request, timeout=300)
