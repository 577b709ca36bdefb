"""Rejection sampling of turns before a policy update.

PRS (profiling-based rejection sampling, Dr. Kernel): a correct, non-hacked turn is kept with
probability ``clip((coverage - threshold) / factor, 0, 1)`` (published defaults 0.3 and 0.1),
so turns whose kernels own little of the device time rarely teach the policy; incorrect
turns are always kept (their learning signal is the failure itself). Rejected turns get a
zero loss mask.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from services.trainer.rows import Trajectory
from services.trainer.run_config import PrsSettings


def prs_keep_probability(coverage: float, correct: bool, hacked: bool, settings: PrsSettings = PrsSettings()) -> float:
    """Probability that PRS keeps a turn."""
    if not correct or hacked:
        return 1.0
    return min(1.0, max(0.0, (coverage - settings.threshold) / settings.factor))


def prs_keep(
    coverage: float, correct: bool, hacked: bool, rng: random.Random, settings: PrsSettings = PrsSettings()
) -> bool:
    """Draws PRS's keep decision for one turn from a seeded generator."""
    return rng.random() < prs_keep_probability(coverage, correct, hacked, settings)


def prs_keep_flags(trajectories: Sequence[Trajectory], settings: PrsSettings, rng: random.Random) -> list[list[bool]]:
    """PRS's keep decision for every turn of a batch (``[trajectory][turn]``, batch order).

    Exactly one draw per turn, whatever the turn's verdict, so the generator's position after
    a step depends only on how many turns it had: a resumed run (its generator restored) draws
    the same decisions. Disabled: every turn is kept and nothing is drawn.
    """
    if not settings.enabled:
        return [[True] * len(trajectory.turns) for trajectory in trajectories]
    return [
        [prs_keep(turn.coverage, turn.correct, turn.hacked, rng, settings) for turn in trajectory.turns]
        for trajectory in trajectories
    ]
