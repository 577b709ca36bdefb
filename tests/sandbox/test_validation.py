"""Request validation as a pure function: each malformed field is refused with a message naming
it, and a well-formed request passes (no server, no processes)."""

from __future__ import annotations

import re

import pytest

from drkernel.errors import InvalidArgument
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.server.scheduler import validate_request
from services.sandbox.server.servicer import request_from_proto
from services.sandbox.settings import SandboxSettings
from services.sandbox.shared.evaluation import EvaluationRequest
from tests.sandbox.conftest import source

SETTINGS = SandboxSettings(max_source_bytes=64 * 2**10)


def request(**fields: object) -> EvaluationRequest:
    """A request as the sandbox handles it, built through the gRPC edge (unknown enum values are
    refused there: tests/sandbox/test_edge.py)."""
    options = fields.pop("options", {})
    base = {"reference_source": source("relu_task.py"), "candidate_source": source("relu_triton.py")}
    return request_from_proto(pb.EvaluateRequest(**{**base, **fields}, options=pb.EvaluateOptions(**options)))


def test_a_well_formed_request_passes() -> None:
    validate_request(request(request_id="ok", options={"timeout_seconds": 30, "timing_trials": 3}), SETTINGS)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"request_id": "x" * 1000}, "request_id is longer than"),
        ({"candidate_source": "#" * (64 * 2**10 + 1)}, "candidate_source is 65537 bytes; the limit is 65536"),
        ({"reference_source": "#" * (64 * 2**10 + 1)}, "reference_source is 65537 bytes"),
        ({"candidate_source": "x = 1\x00"}, "a NUL byte"),
        ({"options": {"timeout_seconds": float("nan")}}, "options.timeout_seconds must be a finite number"),
        ({"options": {"atol": -1.0}}, "options.atol must be a finite number >= 0, got -1.0"),
        ({"options": {"rtol": float("inf")}}, "options.rtol must be a finite number"),
        ({"options": {"timing_trials": 10**7}}, "must be at most"),
        ({"options": {"warmup_trials": 10**7}}, "must be at most"),
        ({"options": {"timing_trials": 2}}, "at least 3"),
        ({"reference_source": "x = 1\n"}, "Model"),
    ],
)
def test_each_malformed_field_is_refused_by_name(fields: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgument, match=re.escape(message)):
        validate_request(request(**fields), SETTINGS)
