"""MRS (mismatch rejection sampling, Dr. Kernel): drop what the learner would not have sampled.

The policy server (vLLM, another kernel, another precision) and the learner assign slightly
different log-probs to the same tokens; when they drift apart, the PPO ratio stops meaning
"new policy / sampling policy" and training destabilises. Per token, log_ratio = learner -
sampler. A trajectory is kept only if w = exp(clamp(mean log_ratio over all its tokens, of all
its turns)) lies within [lower, upper]; a single token whose ratio exp(log_ratio) is below
``veto_ratio`` (a token the learner finds nearly impossible) vetoes its own turn only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from services.trainer.rows import TrainingRow
from services.trainer.run_config import MrsSettings


@dataclass(frozen=True)
class MrsResult:
    """Per-row keep decisions (input order) and the step's mismatch statistics. The rates are
    what MRS finds, whether or not it is enabled; each is counted on its own (a vetoed row of
    a rejected trajectory counts in both)."""

    keep: list[bool]
    trajectory_rejected_rate: float  # share of trajectories outside [lower, upper]
    veto_rate: float  # share of rows with a vetoing token
    logprob_mismatch: float  # mean |log_ratio| over every token of the step


def mrs_decisions(
    rows: Sequence[TrainingRow], learner_logprobs: Sequence[Sequence[float]], settings: MrsSettings
) -> MrsResult:
    """Keep decisions for ``rows`` given the learner's log-probs of their completion tokens.

    A trajectory without completion tokens has no evidence of a mismatch and is kept (w = 1).
    Disabled: every row is kept and the statistics are still computed.
    """
    if len(learner_logprobs) != len(rows):
        raise ValueError(f"learner log-probs for {len(learner_logprobs)} rows, expected {len(rows)}")
    log_ratios: list[list[float]] = []
    for index, (row, learner) in enumerate(zip(rows, learner_logprobs, strict=True)):
        expected = len(row.completion_ids)
        if len(row.sampler_logprobs) != expected or len(learner) != expected:
            raise ValueError(
                f"row {index} (trajectory {row.trajectory}, turn {row.turn}): {expected} completion tokens, "
                f"{len(row.sampler_logprobs)} sampler and {len(learner)} learner log-probs"
            )
        log_ratios.append([new - old for new, old in zip(learner, row.sampler_logprobs, strict=True)])

    sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    for row, ratios in zip(rows, log_ratios, strict=True):
        sums[row.trajectory] = sums.get(row.trajectory, 0.0) + sum(ratios)
        counts[row.trajectory] = counts.get(row.trajectory, 0) + len(ratios)
    kept_trajectories: set[int] = set()
    for trajectory, total in sums.items():
        mean = total / counts[trajectory] if counts[trajectory] else 0.0
        weight = math.exp(min(settings.log_clamp, max(-settings.log_clamp, mean)))
        if settings.lower <= weight <= settings.upper:
            kept_trajectories.add(trajectory)

    # exp(r) < veto_ratio compared in log space: no overflow, and veto_ratio 0 never vetoes
    veto_below = math.log(settings.veto_ratio) if settings.veto_ratio > 0 else -math.inf
    vetoed = [any(r < veto_below for r in ratios) for ratios in log_ratios]

    keep = [
        not settings.enabled or (row.trajectory in kept_trajectories and not veto)
        for row, veto in zip(rows, vetoed, strict=True)
    ]
    tokens = sum(counts.values())
    return MrsResult(
        keep=keep,
        trajectory_rejected_rate=(len(sums) - len(kept_trajectories)) / len(sums) if sums else 0.0,
        veto_rate=sum(vetoed) / len(rows) if rows else 0.0,
        logprob_mismatch=sum(abs(r) for ratios in log_ratios for r in ratios) / tokens if tokens else 0.0,
    )
