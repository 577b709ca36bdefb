"""Rejection sampling of turns before a policy update.

PRS (profiling-based rejection sampling, Dr. Kernel): a correct, non-hacked turn is kept with
probability ``clip((coverage - threshold) / factor, 0, 1)`` (published defaults 0.3 and 0.1),
so turns whose kernels own little of the device time rarely teach the policy; incorrect
turns are always kept (their learning signal is the failure itself). Rejected turns get a
zero loss mask.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class PrsSettings:
    """PRS parameters (published defaults)."""

    threshold: float = 0.3
    factor: float = 0.1


def prs_keep_probability(coverage: float, correct: bool, hacked: bool, settings: PrsSettings = PrsSettings()) -> float:
    """Probability that PRS keeps a turn."""
    if not correct or hacked:
        return 1.0
    return min(1.0, max(0.0, (coverage - settings.threshold) / settings.factor))


def prs_keep(coverage: float, correct: bool, hacked: bool, rng: random.Random, settings: PrsSettings = PrsSettings()) -> bool:
    """Draws PRS's keep decision for one turn from a seeded generator."""
    return rng.random() < prs_keep_probability(coverage, correct, hacked, settings)
