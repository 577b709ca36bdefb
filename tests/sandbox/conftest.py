"""Test data of the sandbox tests and a helper to judge it on the shared server (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from drkernel.v1 import sandbox_pb2 as pb
from drkernel.v1 import sandbox_pb2_grpc
from tests.conftest import sandbox_settings  # noqa: F401 - re-exported for the sandbox tests

DATA = Path(__file__).parent / "data"


def source(name: str) -> str:
    """A test data file's text."""
    return (DATA / name).read_text()


def evaluate(
    stub: sandbox_pb2_grpc.SandboxServiceStub, task: str, candidate: str, **options: object
) -> pb.EvaluateResponse:
    """Judges a candidate (file names in data/ or source text) with timing skipped by default."""
    task_source = source(task) if task.endswith(".py") else task
    candidate_source = source(candidate) if candidate.endswith(".py") else candidate
    request = pb.EvaluateRequest(
        request_id=candidate[:64],
        reference_source=task_source,
        candidate_source=candidate_source,
        options=pb.EvaluateOptions(**{"skip_timing": True, **options}),
    )
    return stub.Evaluate(request, timeout=300)
