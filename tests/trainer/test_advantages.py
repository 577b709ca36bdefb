"""Returns, estimators, KernelGym's masks and row building on hand-worked numbers."""

from __future__ import annotations

import math
import random

import pytest

from services.trainer.advantages import (
    build_rows,
    failed_trajectory_mask,
    flat_groups,
    turn_advantages,
    turn_returns,
    void_after_positive_mask,
)
from services.trainer.rows import Trajectory, Turn
from services.trainer.run_config import AdvantageSettings, PrsSettings

NO_MASKS = AdvantageSettings(void_after_positive=False, mask_failed_trajectories=False, min_group_std=0.0)
NO_PRS = PrsSettings(enabled=False)


def _turn(reward: float, **fields: object) -> Turn:
    return Turn(
        prompt_ids=[1, 2],
        completion_ids=[3],
        sampler_logprobs=[-0.5],
        weights_version=0,
        text="",
        reward=reward,
        **fields,
    )


def _trajectory(task: str, rewards: list[float], sample: int = 0, **fields: object) -> Trajectory:
    return Trajectory(task, sample, [_turn(r, **fields) for r in rewards])


def _batch() -> list[Trajectory]:
    """Task "a", three samples of two turns (gamma 1):
    rewards [0.5, 1.0] -> returns [1.5, 1.0]
    rewards [0.0, 0.5] -> returns [0.5, 0.5]
    rewards [0.0, 0.0] -> returns [0.0, 0.0]"""
    return [_trajectory("a", r, i) for i, r in enumerate([[0.5, 1.0], [0.0, 0.5], [0.0, 0.0]])]


def _flat(values: list[list[float]]) -> list[float]:
    return [v for row in values for v in row]


# ----- returns -----------------------------------------------------------------------------


def test_returns_discount_later_rewards():
    # gamma 0.5: G2 = 4; G1 = 2 + 0.5 * 4 = 4; G0 = 1 + 0.5 * 4 = 3
    assert turn_returns([1.0, 2.0, 4.0], 0.5) == pytest.approx([3.0, 4.0, 4.0])
    # gamma 1: suffix sums 7, 6, 4
    assert turn_returns([1.0, 2.0, 4.0], 1.0) == pytest.approx([7.0, 6.0, 4.0])
    # gamma 0: each turn only its own reward
    assert turn_returns([1.0, 2.0, 4.0], 0.0) == pytest.approx([1.0, 2.0, 4.0])
    assert turn_returns([], 1.0) == []


# ----- estimators --------------------------------------------------------------------------


def test_trloo_leaves_the_sample_out_of_its_turn_group():
    # turn 0, G = [1.5, 0.5, 0.0]: 1.5 - (0.5 + 0)/2 = 1.25; 0.5 - (1.5 + 0)/2 = -0.25; 0 - (1.5 + 0.5)/2 = -1
    #   (= 3/2 * (G - 2/3): 3/2 * 5/6 = 1.25)
    # turn 1, G = [1.0, 0.5, 0.0]: 1 - 0.25 = 0.75; 0.5 - 0.5 = 0; 0 - 0.75 = -0.75
    advantages = turn_advantages(_batch(), "trloo", 1.0)
    assert _flat(advantages) == pytest.approx([1.25, 0.75, -0.25, 0.0, -1.0, -0.75])


def test_trloo_group_of_one_keeps_its_return_and_tasks_do_not_mix():
    # task "b" alone: rewards [0.3, 0.2] -> G = [0.5, 0.2], no baseline
    # task "a": turn 0, G = [1, 0] -> 2/1 * (1 - 0.5) = 1 and -1
    batch = [_trajectory("a", [1.0]), _trajectory("b", [0.3, 0.2]), _trajectory("a", [0.0])]
    assert turn_advantages(batch, "trloo", 1.0) == [
        pytest.approx([1.0]),
        pytest.approx([0.5, 0.2]),
        pytest.approx([-1.0]),
    ]


def test_trloo_handles_ragged_trajectories():
    # turn 0, G = [1.0 + 2.0, 1.0] = [3, 1] -> +2, -2; turn 1 has only the first sample -> its G, 2
    batch = [_trajectory("a", [1.0, 2.0]), _trajectory("a", [1.0])]
    assert turn_advantages(batch, "trloo", 1.0) == [pytest.approx([2.0, 2.0]), pytest.approx([-2.0])]


def test_grpo_divides_by_the_population_std():
    # rewards [1, 1] and [0, 1] -> returns [2, 1] and [1, 1]
    # turn 0, G = [2, 1]: mean 1.5, population std 0.5 (the sample std would be 0.707)
    #   -> +-0.5 / (0.5 + 1e-6)
    # turn 1, G = [1, 1]: mean 1, std 0 -> 0 / 1e-6 = 0
    batch = [_trajectory("a", [1.0, 1.0]), _trajectory("a", [0.0, 1.0])]
    unit = 0.5 / (0.5 + 1e-6)
    assert _flat(turn_advantages(batch, "grpo", 1.0)) == pytest.approx([unit, 0.0, -unit, 0.0], abs=1e-12)


def test_grpo_on_three_samples():
    # turn 0, G = [1.5, 0.5, 0]: mean 2/3, deviations 5/6, -1/6, -2/3,
    #   variance (25 + 1 + 16)/36/3 = 7/18, std = 0.62361 -> 5/6 / 0.62361 = 1.33631 ...
    std = math.sqrt(7 / 18) + 1e-6
    advantages = turn_advantages(_batch(), "grpo", 1.0)
    assert [a[0] for a in advantages] == pytest.approx([5 / 6 / std, -1 / 6 / std, -2 / 3 / std])
    assert advantages[0][0] == pytest.approx(1.33631, abs=1e-5)


def test_grpo_without_std_only_centres():
    # turn 0, G = [1.5, 0.5, 0] - 2/3; turn 1, G = [1, 0.5, 0] - 0.5
    advantages = turn_advantages(_batch(), "grpo_no_std", 1.0)
    assert _flat(advantages) == pytest.approx([5 / 6, 0.5, -1 / 6, 0.0, -2 / 3, -0.5])


def test_rloo_broadcasts_the_first_turn_leave_one_out():
    # G0 = [1.5, 0.5, 0] -> 1.25, -0.25, -1 (as TRLOO's turn 0), on every turn of each sample
    advantages = turn_advantages(_batch(), "rloo", 1.0)
    assert _flat(advantages) == pytest.approx([1.25, 1.25, -0.25, -0.25, -1.0, -1.0])
    # a lone sample of another task keeps its G0 = 0.3 + 0.2; an empty trajectory has no rows
    lone = turn_advantages([_trajectory("b", [0.3, 0.2]), Trajectory("a", 0, [])], "rloo", 1.0)
    assert lone == [pytest.approx([0.5, 0.5]), []]


def test_gamma_reaches_the_estimator():
    # gamma 0: G = rewards; turn 0 rewards [0.5, 0, 0] -> 0.5 - 0 = 0.5, 0 - 0.25 = -0.25, -0.25
    advantages = turn_advantages(_batch(), "trloo", 0.0)
    assert [a[0] for a in advantages] == pytest.approx([0.5, -0.25, -0.25])


def test_unknown_estimator_is_an_error():
    with pytest.raises(ValueError, match="ppo"):
        turn_advantages([], "ppo", 1.0)


# ----- masks -------------------------------------------------------------------------------


def test_void_after_positive_masks_only_later_non_positive_turns():
    batch = [
        _trajectory("a", [0.5, 0.0, 0.0]),  # positive first: both zeros after it
        _trajectory("a", [0.0, 0.5, 0.0]),  # the leading zero precedes any positive
        _trajectory("a", [0.0, 0.0, 0.5]),
        _trajectory("a", [0.5, -0.1, 0.2]),  # a negative reward counts as "no reward" too
    ]
    assert void_after_positive_mask(batch) == [
        [False, True, True],
        [False, False, True],
        [False, False, False],
        [False, True, False],
    ]


def test_failed_masks_the_whole_trajectory():
    batch = [_trajectory("a", [0.5, 0.5]), Trajectory("a", 1, [_turn(0.5), _turn(0.0, failed=True)])]
    assert failed_trajectory_mask(batch) == [[False, False], [True, True]]


def test_flat_groups_use_the_population_std_of_turn_rewards():
    # turn 0 rewards [0.5, 0.5]: std 0 < 1e-3 -> flat
    # turn 1 rewards [0.5, 0.504]: population std 0.002 -> not flat at 1e-3, flat at 0.0025
    #   (the sample std, 0.002 * sqrt(2) = 0.0028, would not be flat at 0.0025)
    # task "b", a group of one: std 0 -> flat
    batch = [_trajectory("a", [0.5, 0.5]), _trajectory("a", [0.5, 0.504]), _trajectory("b", [1.0])]
    assert flat_groups(batch, 1e-3) == {("a", 0), ("b", 0)}
    assert flat_groups(batch, 0.0025) == {("a", 0), ("a", 1), ("b", 0)}
    assert flat_groups(batch, 0.0) == set()


# ----- rows --------------------------------------------------------------------------------


def test_rows_carry_the_turns_and_their_advantages():
    rows, stats = build_rows(_batch(), NO_MASKS, NO_PRS, random.Random(0))
    assert [(r.trajectory, r.turn) for r in rows] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert [r.advantage for r in rows] == pytest.approx([1.25, 0.75, -0.25, 0.0, -1.0, -0.75])
    assert all(r.keep for r in rows)
    assert (rows[0].prompt_ids, rows[0].completion_ids, rows[0].sampler_logprobs) == ([1, 2], [3], [-0.5])
    assert stats.groups == 2 and stats.groups_dropped == 0 and stats.prs_rejected_rate == 0.0


def test_masked_turns_stay_in_the_baseline():
    batch = _batch()
    batch[2].turns[1].failed = True  # masks sample 2 entirely
    settings = AdvantageSettings(void_after_positive=False, min_group_std=0.0)
    rows, stats = build_rows(batch, settings, NO_PRS, random.Random(0))
    assert [r.keep for r in rows] == [True, True, True, True, False, False]
    # still 1.25 = 1.5 - (0.5 + 0)/2; without sample 2 in the baseline it would be 1.5 - 0.5 = 1
    assert rows[0].advantage == pytest.approx(1.25)
    assert stats.masked_failed == 2


def test_each_mask_switch_and_its_count():
    batch = [
        _trajectory("a", [0.5, 0.0], 0),  # turn 1 void after positive
        _trajectory("a", [0.0, 0.0], 1),
        Trajectory("a", 2, [_turn(0.0), _turn(1.0, failed=True)]),  # failed
        _trajectory("b", [0.2, 0.2], 0),  # task b: both turn groups flat (all alike)
        _trajectory("b", [0.2, 0.2], 1),
    ]
    rows, stats = build_rows(batch, AdvantageSettings(), NO_PRS, random.Random(0))
    assert [r.keep for r in rows] == [True, False, True, True, False, False, False, False, False, False]
    assert (stats.masked_void_after_positive, stats.masked_failed, stats.masked_flat_group) == (1, 2, 4)
    assert (stats.groups, stats.groups_dropped) == (4, 2)

    rows, stats = build_rows(batch, NO_MASKS, NO_PRS, random.Random(0))
    assert all(r.keep for r in rows)
    assert (stats.masked_void_after_positive, stats.masked_failed, stats.masked_flat_group) == (0, 0, 0)

    only_void = NO_MASKS.model_copy(update={"void_after_positive": True})
    rows, _ = build_rows(batch, only_void, NO_PRS, random.Random(0))
    assert [i for i, r in enumerate(rows) if not r.keep] == [1]


def test_prs_rejects_only_correct_low_coverage_turns():
    # default ramp (0.3, 0.1): coverage 0 -> p 0 (always rejected), 0.9 -> p 1 (always kept);
    # incorrect and hacked turns are always kept
    batch = [
        Trajectory(
            "a",
            0,
            [
                _turn(0.5, correct=True, coverage=0.0),
                _turn(0.5, correct=True, coverage=0.9),
                _turn(0.0, correct=False, coverage=0.0),
                _turn(0.0, correct=True, hacked=True, coverage=0.0),
            ],
        )
    ]
    rows, stats = build_rows(batch, NO_MASKS, PrsSettings(), random.Random(0))
    assert [r.keep for r in rows] == [False, True, True, True]
    assert stats.prs_rejected == 1 and stats.prs_rejected_rate == pytest.approx(1 / 4)

    rows, stats = build_rows(batch, NO_MASKS, NO_PRS, random.Random(0))
    assert all(r.keep for r in rows) and stats.prs_rejected == 0


def test_build_rows_of_an_empty_batch():
    rows, stats = build_rows([], AdvantageSettings(), PrsSettings(), random.Random(0))
    assert rows == [] and stats.groups == 0 and stats.prs_rejected_rate == 0.0
