"""The reward of one evaluation: a pure function of the response and the reward settings.

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

from drkernel.v1 import sandbox_pb2
from services.sandbox.settings import RewardSettings

_STAGE_NAMES = {
    sandbox_pb2.STAGE_SYNTAX: "syntax",
    sandbox_pb2.STAGE_LOAD: "load",
    sandbox_pb2.STAGE_COMPILE: "compile",
    sandbox_pb2.STAGE_TINY_RUN: "tiny_run",
    sandbox_pb2.STAGE_CORRECTNESS: "correctness",
}


def compute_reward(response: sandbox_pb2.EvaluateResponse, settings: RewardSettings) -> float:
    """Reward for the judged candidate in ``response``."""
    if response.verdict == sandbox_pb2.VERDICT_HACKED:
        return 0.0
    if response.verdict == sandbox_pb2.VERDICT_CORRECT:
        speedup = response.speedup if response.timing.valid else 0.0
        return (
            settings.correct_weight
            + settings.speedup_weight * min(speedup, settings.speedup_cap)
            + settings.coverage_weight * response.coverage
        )
    if settings.staged_partial_credit:
        stage = _STAGE_NAMES.get(response.furthest_stage)
        return settings.correct_weight * settings.stage_credit.get(stage, 0.0) if stage else 0.0
    return 0.0
