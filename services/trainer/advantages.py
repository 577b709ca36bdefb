"""Per-turn returns, advantages and KernelGym's loss masks for one step's batch.

Every turn becomes one training row whose advantage is broadcast to all its tokens. A *group*
is the set of trajectories of one task in the step (two groups of the same task in one step
simply merge into a larger group). The turn-level estimators compare returns within a
(task, turn index) group; masks only switch a row's loss off, they never remove it from the
baselines (KernelGym zeroes the response mask, not the grouping), so masking one sample does
not move the advantages of the others.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from services.trainer.rejection import prs_keep_flags
from services.trainer.rows import TrainingRow, Trajectory
from services.trainer.run_config import AdvantageSettings, PrsSettings

GRPO_EPSILON = 1e-6  # added to the group's std so a flat group divides by a small number, not zero

TurnKey = tuple[str, int]  # (task, turn index)
Member = tuple[int, int]  # (trajectory index in the batch, turn index)


def turn_returns(rewards: Sequence[float], gamma: float) -> list[float]:
    """G_t = r_t + gamma * G_{t+1}: a turn is credited with what its refinements earned later."""
    returns = [0.0] * len(rewards)
    later = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        later = rewards[t] + gamma * later
        returns[t] = later
    return returns


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _population_std(values: Sequence[float]) -> float:
    """Std with divisor n (not n - 1): the spread of the group itself, defined for n = 1."""
    mean = _mean(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def _leave_one_out(values: Sequence[float]) -> list[float]:
    """v_i - mean_{j != i} v_j = n / (n - 1) * (v_i - mean): the baseline excludes the sample
    itself, so it is independent of that sample and the gradient stays unbiased. A group of one
    has no baseline: its advantage is its own value."""
    n = len(values)
    if n == 1:
        return [values[0]]
    mean = _mean(values)
    return [n / (n - 1) * (v - mean) for v in values]


def _grpo(values: Sequence[float]) -> list[float]:
    """(v_i - mean) / (population std + 1e-6), self-inclusive as in GRPO."""
    mean, std = _mean(values), _population_std(values)
    return [(v - mean) / (std + GRPO_EPSILON) for v in values]


def _centred(values: Sequence[float]) -> list[float]:
    """v_i - mean (GRPO's baseline without the std normalisation)."""
    mean = _mean(values)
    return [v - mean for v in values]


_TURN_ESTIMATORS: dict[str, Callable[[Sequence[float]], list[float]]] = {
    "trloo": _leave_one_out,
    "grpo": _grpo,
    "grpo_no_std": _centred,
}


def turn_groups(trajectories: Sequence[Trajectory]) -> dict[TurnKey, list[Member]]:
    """The members of every (task, turn index) group, in batch order. A trajectory shorter
    than the others simply has no member in the later turns' groups."""
    groups: dict[TurnKey, list[Member]] = {}
    for i, trajectory in enumerate(trajectories):
        for t in range(len(trajectory.turns)):
            groups.setdefault((trajectory.task, t), []).append((i, t))
    return groups


def turn_advantages(trajectories: Sequence[Trajectory], estimator: str, gamma: float) -> list[list[float]]:
    """The advantage of every turn (``[trajectory][turn]``).

    trloo / grpo / grpo_no_std compare the returns G_t within each (task, turn) group; rloo
    compares each trajectory's first-turn return G_0 within its task's group (leave-one-out)
    and gives every turn of the trajectory that one value.
    """
    if estimator != "rloo" and estimator not in _TURN_ESTIMATORS:
        raise ValueError(f"unknown advantage estimator {estimator!r}")
    returns = [turn_returns([turn.reward for turn in trajectory.turns], gamma) for trajectory in trajectories]
    advantages = [[0.0] * len(r) for r in returns]
    if estimator == "rloo":
        by_task: dict[str, list[int]] = {}
        for i, trajectory in enumerate(trajectories):
            if trajectory.turns:
                by_task.setdefault(trajectory.task, []).append(i)
        for members in by_task.values():
            for i, advantage in zip(members, _leave_one_out([returns[i][0] for i in members]), strict=True):
                advantages[i] = [advantage] * len(returns[i])
        return advantages
    for members in turn_groups(trajectories).values():
        values = _TURN_ESTIMATORS[estimator]([returns[i][t] for i, t in members])
        for (i, t), advantage in zip(members, values, strict=True):
            advantages[i][t] = advantage
    return advantages


def void_after_positive_mask(trajectories: Sequence[Trajectory]) -> list[list[bool]]:
    """True for a turn with reward <= 0 after an earlier positive turn of its trajectory: a
    refinement that broke a working kernel is not trained on as if it were a fresh failure."""
    masks = []
    for trajectory in trajectories:
        seen_positive, mask = False, []
        for turn in trajectory.turns:
            mask.append(seen_positive and turn.reward <= 0)
            seen_positive = seen_positive or turn.reward > 0
        masks.append(mask)
    return masks


def failed_trajectory_mask(trajectories: Sequence[Trajectory]) -> list[list[bool]]:
    """True for every turn of a trajectory the environment failed on (an error or time-out of
    the judge, not of the candidate): its rewards say nothing about the policy."""
    return [[any(turn.failed for turn in trajectory.turns)] * len(trajectory.turns) for trajectory in trajectories]


def flat_groups(trajectories: Sequence[Trajectory], min_std: float) -> set[TurnKey]:
    """The (task, turn) groups whose turn rewards have a population std below ``min_std``:
    samples that all scored alike teach nothing. A group of one is flat (std 0) unless
    ``min_std`` is 0, which switches the rule off."""
    return {
        key
        for key, members in turn_groups(trajectories).items()
        if _population_std([trajectories[i].turns[t].reward for i, t in members]) < min_std
    }


@dataclass(frozen=True)
class RowStats:
    """Counts of one step's rows for the logs. A turn masked by several rules counts under
    each; rules that are switched off count 0."""

    masked_void_after_positive: int
    masked_failed: int
    masked_flat_group: int
    groups: int  # (task, turn) groups in the batch
    groups_dropped: int  # of which flat (their turns masked)
    prs_rejected: int  # turns PRS rejected (whether or not another rule masked them too)
    prs_rejected_rate: float  # prs_rejected / turns


def build_rows(
    trajectories: Sequence[Trajectory], settings: AdvantageSettings, prs: PrsSettings, rng: random.Random
) -> tuple[list[TrainingRow], RowStats]:
    """One row per turn, in batch order, with its advantage and ``keep`` = no enabled mask
    applies and PRS kept it; ``trajectory`` is the index in ``trajectories``. ``rng`` is the
    run's PRS generator (one draw per turn when PRS is enabled)."""
    advantages = turn_advantages(trajectories, settings.estimator, settings.gamma)
    shapes = [[False] * len(trajectory.turns) for trajectory in trajectories]
    void = void_after_positive_mask(trajectories) if settings.void_after_positive else shapes
    failed = failed_trajectory_mask(trajectories) if settings.mask_failed_trajectories else shapes
    flat = flat_groups(trajectories, settings.min_group_std)
    prs_kept = prs_keep_flags(trajectories, prs, rng)

    rows: list[TrainingRow] = []
    counts = {"void": 0, "failed": 0, "flat": 0, "prs": 0}
    for i, trajectory in enumerate(trajectories):
        for t, turn in enumerate(trajectory.turns):
            reasons = {
                "void": void[i][t],
                "failed": failed[i][t],
                "flat": (trajectory.task, t) in flat,
                "prs": not prs_kept[i][t],
            }
            for reason, applies in reasons.items():
                counts[reason] += applies
            rows.append(
                TrainingRow(
                    prompt_ids=turn.prompt_ids,
                    completion_ids=turn.completion_ids,
                    sampler_logprobs=turn.sampler_logprobs,
                    advantage=advantages[i][t],
                    keep=not any(reasons.values()),
                    trajectory=i,
                    turn=t,
                )
            )
    stats = RowStats(
        masked_void_after_positive=counts["void"],
        masked_failed=counts["failed"],
        masked_flat_group=counts["flat"],
        groups=len(turn_groups(trajectories)),
        groups_dropped=len(flat),
        prs_rejected=counts["prs"],
        prs_rejected_rate=counts["prs"] / len(rows) if rows else 0.0,
    )
    return rows, stats
