"""The servicer's translation between protos and the sandbox's typed evaluation: the enums map
one to one (stage statuses included, never read from text), unknown values are refused, and
what was never measured stays absent from the response."""

from __future__ import annotations

import enum

import pytest

from drkernel.errors import InvalidArgument
from drkernel.v1 import common_pb2
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.server.servicer import request_from_proto, response_proto
from services.sandbox.server.verdict import Ending, ProcessOutcome, combine
from services.sandbox.settings import RewardSettings
from services.sandbox.shared.evaluation import (
    CorrectnessProfile,
    Device,
    InputVariant,
    Judgement,
    Stage,
    StageResult,
    StageStatus,
    Verdict,
)


@pytest.mark.parametrize(
    ("domain", "proto", "prefix"),
    [
        (Verdict, pb.Verdict, "VERDICT_"),
        (Stage, pb.Stage, "STAGE_"),
        (StageStatus, pb.StageStatus, "STAGE_STATUS_"),
        (InputVariant, pb.InputVariant, "INPUT_VARIANT_"),
        (CorrectnessProfile, pb.CorrectnessProfile, "CORRECTNESS_PROFILE_"),
        (Device, common_pb2.Device, "DEVICE_"),
    ],
)
def test_every_enum_has_the_protos_names_and_numbers(domain: type[enum.IntEnum], proto, prefix):
    assert {prefix + member.name: member.value for member in domain} == dict(proto.items())


def test_stage_statuses_reach_the_response_as_they_were_decided():
    stages = (
        StageResult(Stage.SYNTAX, StageStatus.PASSED, 0.1, "parsed"),
        StageResult(Stage.TIMING, StageStatus.SKIPPED, 0.0, "skipped by request"),
        StageResult(Stage.PROFILE, StageStatus.FAILED, 0.2, "passed, says the text"),
    )
    result = combine(
        Judgement(request_id="r", verdict=Verdict.RUNTIME_ERROR, stages=stages),
        ProcessOutcome(Ending.FINISHED),
        RewardSettings(),
    )
    response = response_proto(result)
    assert [(pb.Stage.Name(s.stage), pb.StageStatus.Name(s.status), s.detail) for s in response.stages] == [
        ("STAGE_SYNTAX", "STAGE_STATUS_PASSED", "parsed"),
        ("STAGE_TIMING", "STAGE_STATUS_SKIPPED", "skipped by request"),
        ("STAGE_PROFILE", "STAGE_STATUS_FAILED", "passed, says the text"),
    ]
    assert response.verdict == pb.VERDICT_RUNTIME_ERROR and response.request_id == "r"
    assert not response.HasField("timing") and not response.HasField("profile")


def test_a_request_becomes_the_typed_request_and_unknown_enums_are_refused():
    options = pb.EvaluateOptions(
        device=common_pb2.DEVICE_CUDA, seed=0, correctness_profile=pb.CORRECTNESS_PROFILE_KERNELGYM
    )
    request = request_from_proto(
        pb.EvaluateRequest(request_id="r", reference_source="t", candidate_source="c", options=options)
    )
    assert (request.options.device, request.options.seed, request.options.correctness_profile) == (
        Device.CUDA,
        0,
        CorrectnessProfile.KERNELGYM,
    )
    assert request_from_proto(pb.EvaluateRequest()).options.seed is None
    with pytest.raises(InvalidArgument, match=r"options\.device 7 is not a known Device"):
        request_from_proto(pb.EvaluateRequest(options=pb.EvaluateOptions(device=7)))
    with pytest.raises(InvalidArgument, match=r"options\.correctness_profile 9 is not a known CorrectnessProfile"):
        request_from_proto(pb.EvaluateRequest(options=pb.EvaluateOptions(correctness_profile=9)))
