"""``combine``, the one place an evaluation's verdict, reward and feedback are settled: every
way the candidate's process can end, against every verdict the judge can reach."""

from __future__ import annotations

import dataclasses

import pytest

from services.profiler import ProfileSummary
from services.sandbox.server.feedback import feedback_text
from services.sandbox.server.verdict import Ending, ProcessOutcome, combine
from services.sandbox.settings import RewardSettings
from services.sandbox.shared.evaluation import (
    Judgement,
    RuntimeStats,
    Stage,
    TimingReport,
    Verdict,
)
from services.sandbox.shared.reward import compute_reward

SETTINGS = RewardSettings()
EVIDENCE = ("eval mode without autograd on tiny inputs: no Triton kernel of its own ran",)
JUDGED = [v for v in Verdict if v not in (Verdict.UNSPECIFIED, Verdict.TIMEOUT)]  # what a judge can conclude
OUTCOMES = {
    Ending.FINISHED: ProcessOutcome(Ending.FINISHED),
    Ending.TIMED_OUT: ProcessOutcome(
        Ending.TIMED_OUT, "the evaluation exceeded its limit of 5 s and the candidate was killed"
    ),
    Ending.DIED: ProcessOutcome(Ending.DIED, "the candidate's process was killed by SIGKILL"),
}


def judgement(verdict: Verdict, **fields: object) -> Judgement:
    timed = TimingReport(
        valid=True,
        reference=RuntimeStats(trials=3, median_us=20.0),
        candidate=RuntimeStats(trials=3, median_us=10.0),
    )
    defaults: dict[str, object] = {
        "request_id": "r",
        "verdict": verdict,
        "error": "" if verdict == Verdict.CORRECT else "the judge's error",
        "hack_evidence": EVIDENCE,
        "furthest_stage": Stage.PROFILE if verdict == Verdict.CORRECT else Stage.TINY_RUN,
        "timing": timed,
        "speedup": 2.0,
        "coverage": 0.5,
    }
    return Judgement(**{**defaults, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize("ending", list(Ending))
@pytest.mark.parametrize("verdict", JUDGED)
def test_every_ending_against_every_verdict(verdict, ending):
    judged = judgement(verdict)
    outcome = OUTCOMES[ending]
    result = combine(judged, outcome, SETTINGS)
    expected_verdict = Verdict.TIMEOUT if ending is Ending.TIMED_OUT else verdict
    assert result.verdict == expected_verdict
    assert result.error == (judged.error if ending is Ending.FINISHED else outcome.detail)
    assert result.hack_reasons == (EVIDENCE if expected_verdict == Verdict.HACKED else ())
    assert result.reward == compute_reward(
        SETTINGS,
        verdict=expected_verdict,
        speedup=2.0,
        speedup_valid=True,
        coverage=0.5,
        furthest_stage=judged.furthest_stage,
    )
    assert result.feedback == feedback_text(expected_verdict, result.error, result.hack_reasons, judged)
    assert result.judgement is judged


def test_a_correct_finished_candidate_earns_speedup_and_coverage():
    result = combine(judgement(Verdict.CORRECT), OUTCOMES[Ending.FINISHED], SETTINGS)
    assert result.reward == pytest.approx(0.5 + 0.5 * 2.0 + 0.5 * 0.5)
    assert result.feedback.startswith("Correct on 0 input variant(s). Speedup 2.00x over PyTorch")


def test_the_time_limit_overrides_even_a_correct_verdict_and_its_reward():
    result = combine(judgement(Verdict.CORRECT), OUTCOMES[Ending.TIMED_OUT], SETTINGS)
    assert (result.verdict, result.reward) == (Verdict.TIMEOUT, 0.0)
    assert result.feedback.startswith("Timed out: the evaluation exceeded its limit of 5 s")


def test_a_judge_that_never_answered_still_gives_a_timeout():
    empty = Judgement(request_id="r", device_name="cpu")
    result = combine(empty, OUTCOMES[Ending.TIMED_OUT], SETTINGS)
    assert (result.verdict, result.reward, result.hack_reasons) == (Verdict.TIMEOUT, 0.0, ())
    assert result.judgement.device_name == "cpu"


def test_a_dead_candidate_keeps_the_judges_verdict_with_the_exit_explained():
    result = combine(judgement(Verdict.RUNTIME_ERROR), OUTCOMES[Ending.DIED], SETTINGS)
    assert result.verdict == Verdict.RUNTIME_ERROR
    assert result.feedback == "Runtime error: the candidate's process was killed by SIGKILL"


def test_hack_reasons_are_reported_only_under_a_hacked_verdict():
    hacked = combine(judgement(Verdict.HACKED), OUTCOMES[Ending.FINISHED], SETTINGS)
    assert hacked.hack_reasons == EVIDENCE and hacked.reward == 0.0
    assert hacked.feedback.startswith(f"Rejected as reward hacking: {EVIDENCE[0]}.")
    incorrect = combine(judgement(Verdict.INCORRECT), OUTCOMES[Ending.FINISHED], SETTINGS)
    assert incorrect.hack_reasons == ()


def test_an_invalid_timing_earns_no_speedup_and_a_profile_names_the_bottleneck():
    profile = ProfileSummary(
        kernels=(),
        total_device_time_us=0.0,
        coverage=0.0,
        reference_kernels=(),
        reference_total_device_time_us=0.0,
        method="m",
    )
    judged = dataclasses.replace(
        judgement(Verdict.CORRECT),
        timing=TimingReport(invalid_reason="CPU interpreter timing is not comparable"),
        speedup=0.0,
        profile=profile,
    )
    result = combine(judged, OUTCOMES[Ending.FINISHED], SETTINGS)
    assert result.reward == pytest.approx(0.5 + 0.5 * 0.5)
    assert (
        result.feedback
        == "Correct on 0 input variant(s). Speed not measured: CPU interpreter timing is not comparable."
    )


def test_partial_credit_follows_the_furthest_stage_even_for_a_timeout_never_for_a_hack():
    settings = RewardSettings(staged_partial_credit=True)
    incorrect = judgement(Verdict.INCORRECT, furthest_stage=Stage.COMPILE)
    assert combine(incorrect, OUTCOMES[Ending.FINISHED], settings).reward == pytest.approx(0.5 * 0.3)
    assert combine(incorrect, OUTCOMES[Ending.TIMED_OUT], settings).reward == pytest.approx(0.5 * 0.3)
    hacked = judgement(Verdict.HACKED, furthest_stage=Stage.CORRECTNESS)
    assert combine(hacked, OUTCOMES[Ending.FINISHED], settings).reward == 0.0
