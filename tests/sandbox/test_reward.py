"""The reward function on hand-worked numbers."""

from __future__ import annotations

import pytest

from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.settings import RewardSettings
from services.sandbox.shared.reward import compute_reward


def response(verdict, speedup=0.0, valid=True, stage=pb.STAGE_UNSPECIFIED):
    return pb.EvaluateResponse(
        verdict=verdict, speedup=speedup, furthest_stage=stage, timing=pb.TimingReport(valid=valid)
    )


@pytest.mark.parametrize(
    ("speedup", "expected"),
    [(0.5, 0.5 + 0.5 * 0.5), (1.2, 0.5 + 0.6), (3.0, 2.0), (7.5, 2.0)],
)
def test_published_default_for_correct_kernels(speedup, expected):
    assert compute_reward(response(pb.VERDICT_CORRECT, speedup), RewardSettings()) == pytest.approx(expected)


def test_invalid_timing_earns_only_the_correctness_part():
    assert compute_reward(response(pb.VERDICT_CORRECT, 2.0, valid=False), RewardSettings()) == 0.5


@pytest.mark.parametrize(
    "verdict",
    [pb.VERDICT_INCORRECT, pb.VERDICT_SYNTAX_ERROR, pb.VERDICT_COMPILE_ERROR, pb.VERDICT_RUNTIME_ERROR, pb.VERDICT_TIMEOUT, pb.VERDICT_HACKED],
)
def test_failures_earn_nothing_by_default(verdict):
    assert compute_reward(response(verdict, 2.0, stage=pb.STAGE_CORRECTNESS), RewardSettings()) == 0.0


def test_staged_partial_credit_scales_correct_weight_by_the_furthest_stage():
    settings = RewardSettings(staged_partial_credit=True)
    assert compute_reward(response(pb.VERDICT_INCORRECT, stage=pb.STAGE_TINY_RUN), settings) == pytest.approx(0.5 * 0.5)
    assert compute_reward(response(pb.VERDICT_COMPILE_ERROR, stage=pb.STAGE_LOAD), settings) == pytest.approx(0.5 * 0.1)
    assert compute_reward(response(pb.VERDICT_SYNTAX_ERROR), settings) == 0.0
    assert compute_reward(response(pb.VERDICT_HACKED, stage=pb.STAGE_CORRECTNESS), settings) == 0.0
