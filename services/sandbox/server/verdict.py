"""The one place an evaluation's verdict, reward and feedback are decided.

The judge reports what it found (a Judgement); the worker reports how the candidate's process
ended (a ProcessOutcome); ``combine`` settles the result from both, exactly once: a time limit
overrides any verdict, a process that died explains its own error, hack reasons are reported
only under a HACKED verdict, and reward and feedback follow from the final verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from services.sandbox.server.feedback import feedback_text
from services.sandbox.settings import RewardSettings
from services.sandbox.shared.evaluation import Judgement, Verdict
from services.sandbox.shared.reward import compute_reward


class Ending(Enum):
    """How the candidate's process ended, as the worker saw it."""

    FINISHED = "finished"  # served the whole evaluation
    TIMED_OUT = "timed out"  # killed at the evaluation's time limit
    DIED = "died"  # vanished mid-evaluation, on its own


@dataclass(frozen=True)
class ProcessOutcome:
    """The candidate's process's ending; ``detail`` says what happened in words (the limit
    exceeded, or the exit status and last output), empty when it finished."""

    ending: Ending
    detail: str = ""


@dataclass(frozen=True)
class Result:
    """An evaluation's settled outcome: the final verdict, error, hack reasons, reward and
    feedback, with the judgement they were settled from (its stages, checks, timing and
    profile); the worker and scheduler add how long it took and waited."""

    judgement: Judgement
    verdict: Verdict
    error: str
    hack_reasons: tuple[str, ...]
    reward: float
    feedback: str
    evaluation_seconds: float = 0.0
    queue_seconds: float = 0.0


def combine(judgement: Judgement, outcome: ProcessOutcome, settings: RewardSettings) -> Result:
    """The result of ``judgement`` given how the candidate's process ended."""
    verdict, error = judgement.verdict, judgement.error
    if outcome.ending is Ending.TIMED_OUT:
        verdict, error = Verdict.TIMEOUT, outcome.detail
    elif outcome.ending is Ending.DIED:
        error = outcome.detail
    hack_reasons = judgement.hack_evidence if verdict == Verdict.HACKED else ()
    timing = judgement.timing
    reward = compute_reward(
        settings,
        verdict=verdict,
        speedup=judgement.speedup,
        speedup_valid=timing is not None and timing.valid,
        coverage=judgement.coverage,
        furthest_stage=judgement.furthest_stage,
    )
    return Result(
        judgement, verdict, error, hack_reasons, reward, feedback_text(verdict, error, hack_reasons, judgement)
    )
