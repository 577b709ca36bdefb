"""Fast@p and the other numbers of a benchmark, as pure functions over judged generations.

KernelBench's fast_p (src/kernelbench/score.py) is, over the problems of a level, the share
whose sample is correct and faster than the baseline by more than p; a problem without a
sample, or whose sample failed, counts as not fast. KernelBench judges one sample per problem
(sample 0). With several samples and turns per task, drkernel picks per task the generation
``best`` ranks first: correct before not, then the higher speedup, then the higher reward,
then the earlier sample and turn. So a task is fast at p when any of its generations is
correct with speedup > p (best-of-N over samples, the best turn of each history); with one
sample and one turn this is KernelBench's number.

p = 0 asks only for correctness: every measured speedup is positive, and where timing is not
valid (CPU) no speedup exists, so Fast@p for p > 0 is 0 there and Fast@0 is the correct rate.
A hacked generation is never correct (the judge's verdict is one or the other).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

# The thresholds reported, as the summary's keys (KernelBench and Dr. Kernel report these).
THRESHOLDS: tuple[str, ...] = ("0", "1", "1.2", "1.5", "2", "3")


class Outcome(Protocol):
    """What the metrics read of one judged generation."""

    @property
    def task(self) -> str: ...
    @property
    def sample(self) -> int: ...
    @property
    def turn(self) -> int: ...
    @property
    def correct(self) -> bool: ...
    @property
    def reward(self) -> float: ...
    @property
    def speedup(self) -> float | None: ...


# Which speedup a metric reads: against eager PyTorch (the judge's) or another baseline.
Speed = Callable[[Outcome], float | None]


def eager(outcome: Outcome) -> float | None:
    """The judge's speedup over the reference run eagerly (None when not validly timed)."""
    return outcome.speedup


def is_fast(outcome: Outcome | None, p: float, speed: Speed = eager) -> bool:
    """Correct, and (for p > 0) validly timed faster than the baseline by more than p."""
    if outcome is None or not outcome.correct:
        return False
    if p == 0:
        return True
    value = speed(outcome)
    return value is not None and value > p


def rank(outcome: Outcome, speed: Speed = eager) -> tuple[bool, float, float, int, int]:
    """The order ``best`` picks by (greater first)."""
    return (outcome.correct, speed(outcome) or 0.0, outcome.reward, -outcome.sample, -outcome.turn)


def best(outcomes: Iterable[Outcome], speed: Speed = eager) -> Outcome | None:
    """The generation a task is judged by; None when it has none."""
    return max(outcomes, key=lambda o: rank(o, speed), default=None)


def by_task(outcomes: Iterable[Outcome]) -> dict[str, list[Outcome]]:
    grouped: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        grouped.setdefault(outcome.task, []).append(outcome)
    return grouped


def fast_p(chosen: Mapping[str, Outcome | None], tasks: Sequence[str], speed: Speed = eager) -> dict[str, float]:
    """Fast@p for every threshold: the share of ``tasks`` (all of them, the denominator) whose
    chosen generation is fast at p; a task missing from ``chosen`` is not fast."""
    count = max(len(tasks), 1)
    return {
        p: sum(is_fast(chosen.get(task), float(p), speed) for task in tasks) / count if tasks else 0.0
        for p in THRESHOLDS
    }


def fast_p_of(outcomes: Iterable[Outcome], tasks: Sequence[str], speed: Speed = eager) -> dict[str, float]:
    """Fast@p over ``tasks`` with each task judged by its best generation."""
    return fast_p({task: best(group, speed) for task, group in by_task(outcomes).items()}, tasks, speed)


def geometric_mean(values: Iterable[float]) -> float | None:
    """Geometric mean of positive values; None when there are none."""
    logs = [math.log(v) for v in values if v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def speedups_of_correct(chosen: Mapping[str, Outcome | None], speed: Speed = eager) -> list[float]:
    """The speedups of the tasks whose chosen generation is correct and validly timed."""
    values = []
    for outcome in chosen.values():
        value = speed(outcome) if outcome is not None and outcome.correct else None
        if value is not None:
            values.append(value)
    return values


def sample_ids(outcomes: Iterable[Outcome]) -> list[int]:
    return sorted({o.sample for o in outcomes})


def turn_curves(
    outcomes: Sequence[Outcome], tasks: Sequence[str], speed: Speed = eager
) -> list[tuple[int, dict[str, float], dict[str, float]]]:
    """For each turn t = 1..T: (t, Fast@p of the last generation by turn t, Fast@p of the best
    generation of turns 1..t), each the mean over samples of that sample's Fast@p over
    ``tasks`` (Dr. Kernel's last-turn and best-turn curves of sequential test-time scaling).
    A history that ended before turn t (a harness that stops once a kernel is correct) keeps
    its last kernel, so that the curve does not fall for an early stop; a sample without any
    generation of a task by turn t is not fast there."""
    samples = sample_ids(outcomes)
    turns = max((o.turn for o in outcomes), default=0)
    curves = []
    for t in range(1, turns + 1):
        last: list[dict[str, float]] = []
        so_far: list[dict[str, float]] = []
        for s in samples:
            own = [o for o in outcomes if o.sample == s and o.turn <= t]
            last.append(fast_p_of(latest(own), tasks, speed))
            so_far.append(fast_p_of(own, tasks, speed))
        curves.append((t, _mean(last), _mean(so_far)))
    return curves


def latest(outcomes: Iterable[Outcome]) -> list[Outcome]:
    """Each task's generation of the highest turn (of one sample's history)."""
    chosen: dict[str, Outcome] = {}
    for outcome in outcomes:
        if outcome.task not in chosen or outcome.turn > chosen[outcome.task].turn:
            chosen[outcome.task] = outcome
    return list(chosen.values())


def best_of_n(
    outcomes: Sequence[Outcome], tasks: Sequence[str], speed: Speed = eager
) -> list[tuple[int, dict[str, float]]]:
    """For N = 1..(number of samples): Fast@p with each task judged by its best generation
    among the first N samples (sample ids in order), every turn of each; the last is the
    headline number."""
    samples = sample_ids(outcomes)
    return [
        (n, fast_p_of([o for o in outcomes if o.sample in set(samples[:n])], tasks, speed))
        for n in range(1, len(samples) + 1)
    ]


def _mean(points: Sequence[dict[str, float]]) -> dict[str, float]:
    return {p: sum(point[p] for point in points) / len(points) if points else 0.0 for p in THRESHOLDS}
