"""The reward function on hand-worked numbers."""

from __future__ import annotations

import pytest

from services.sandbox.settings import RewardSettings
from services.sandbox.shared.evaluation import Stage, Verdict
from services.sandbox.shared.reward import compute_reward


def reward(verdict, speedup=0.0, valid=True, stage=Stage.UNSPECIFIED, settings=None):
    return compute_reward(
        settings or RewardSettings(),
        verdict=verdict,
        speedup=speedup,
        speedup_valid=valid,
        coverage=0.0,
        furthest_stage=stage,
    )


@pytest.mark.parametrize(
    ("speedup", "expected"),
    [(0.5, 0.5 + 0.5 * 0.5), (1.2, 0.5 + 0.6), (3.0, 2.0), (7.5, 2.0)],
)
def test_published_default_for_correct_kernels(speedup, expected):
    assert reward(Verdict.CORRECT, speedup) == pytest.approx(expected)


def test_invalid_timing_earns_only_the_correctness_part():
    assert reward(Verdict.CORRECT, 2.0, valid=False) == 0.5


def test_coverage_earns_its_weight_for_correct_kernels_only():
    settings = RewardSettings()
    assert compute_reward(
        settings,
        verdict=Verdict.CORRECT,
        speedup=0.0,
        speedup_valid=False,
        coverage=0.8,
        furthest_stage=Stage.PROFILE,
    ) == pytest.approx(0.5 + 0.5 * 0.8)
    assert (
        compute_reward(
            settings,
            verdict=Verdict.INCORRECT,
            speedup=0.0,
            speedup_valid=False,
            coverage=0.8,
            furthest_stage=Stage.TINY_RUN,
        )
        == 0.0
    )


@pytest.mark.parametrize(
    "verdict",
    [
        Verdict.INCORRECT,
        Verdict.SYNTAX_ERROR,
        Verdict.COMPILE_ERROR,
        Verdict.RUNTIME_ERROR,
        Verdict.TIMEOUT,
        Verdict.HACKED,
    ],
)
def test_failures_earn_nothing_by_default(verdict):
    assert reward(verdict, 2.0, stage=Stage.CORRECTNESS) == 0.0


def test_staged_partial_credit_scales_correct_weight_by_the_furthest_stage():
    settings = RewardSettings(staged_partial_credit=True)
    assert reward(Verdict.INCORRECT, stage=Stage.TINY_RUN, settings=settings) == pytest.approx(0.5 * 0.5)
    assert reward(Verdict.COMPILE_ERROR, stage=Stage.LOAD, settings=settings) == pytest.approx(0.5 * 0.1)
    assert reward(Verdict.SYNTAX_ERROR, settings=settings) == 0.0
    assert reward(Verdict.HACKED, stage=Stage.CORRECTNESS, settings=settings) == 0.0
    assert reward(Verdict.TIMEOUT, stage=Stage.TIMING, settings=settings) == 0.0
