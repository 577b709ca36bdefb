"""The reward of one evaluation: a pure function of its outcome and the reward settings.

Default (Dr. Kernel / KernelGym, published): 0 for every failure and every hack; a correct
kernel earns ``correct_weight + speedup_weight * min(speedup, speedup_cap) + coverage_weight
* coverage``, i.e. 0.5 + 0.5 * min(speedup, 3) + 0.5 * coverage (the PR term: the share of
device time in the candidate's own kernels, which rewards owning the bottleneck over moving
a trivial op into Triton). A speedup that was not validly measured (CPU, skipped timing)
counts as 0; a skipped profile gives coverage 0. With ``staged_partial_credit``
(Beyond TritonRL) a failed, non-hacked candidate earns ``correct_weight`` times the credit of
the furthest stage it passed.
"""

from __future__ import annotations

from services.sandbox.settings import RewardSettings, StageName
from services.sandbox.shared.evaluation import Stage, Verdict

_STAGE_NAMES: dict[Stage, StageName] = {
    Stage.SYNTAX: "syntax",
    Stage.LOAD: "load",
    Stage.COMPILE: "compile",
    Stage.TINY_RUN: "tiny_run",
    Stage.CORRECTNESS: "correctness",
}


def compute_reward(
    settings: RewardSettings,
    *,
    verdict: Verdict,
    speedup: float,
    speedup_valid: bool,
    coverage: float,
    furthest_stage: Stage,
) -> float:
    """Reward for a judged candidate (``speedup_valid``: the speedup was validly measured)."""
    if verdict == Verdict.HACKED:
        return 0.0
    if verdict == Verdict.CORRECT:
        measured = speedup if speedup_valid else 0.0
        return (
            settings.correct_weight
            + settings.speedup_weight * min(measured, settings.speedup_cap)
            + settings.coverage_weight * coverage
        )
    if settings.staged_partial_credit:
        stage = _STAGE_NAMES.get(furthest_stage)
        return settings.correct_weight * settings.stage_credit.get(stage, 0.0) if stage else 0.0
    return 0.0
