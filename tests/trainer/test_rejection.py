"""PRS on hand-worked probabilities and seeded draws."""

from __future__ import annotations

import random

import pytest

from services.trainer.rejection import prs_keep, prs_keep_flags, prs_keep_probability
from services.trainer.rows import Trajectory, Turn
from services.trainer.run_config import PrsSettings


@pytest.mark.parametrize(
    ("coverage", "expected"),
    [(0.0, 0.0), (0.3, 0.0), (0.35, 0.5), (0.4, 1.0), (0.86, 1.0)],
)
def test_keep_probability_for_correct_turns(coverage, expected):
    assert prs_keep_probability(coverage, correct=True, hacked=False) == pytest.approx(expected)


def test_incorrect_and_hacked_turns_are_always_kept():
    assert prs_keep_probability(0.0, correct=False, hacked=False) == 1.0
    assert prs_keep_probability(0.0, correct=True, hacked=True) == 1.0


def test_settings_move_the_ramp():
    assert prs_keep_probability(0.55, True, False, PrsSettings(threshold=0.5, factor=0.2)) == pytest.approx(0.25)


def test_draws_are_seeded_and_match_the_probability():
    draws = [prs_keep(0.35, True, False, random.Random(7)) for _ in range(3)]
    assert len(set(draws)) == 1  # same seed, same decision
    rng = random.Random(0)
    kept = sum(prs_keep(0.35, True, False, rng) for _ in range(20_000))
    assert kept / 20_000 == pytest.approx(0.5, abs=0.02)


def _turn(correct: bool, coverage: float, hacked: bool = False) -> Turn:
    return Turn([1], [2], [-0.1], 0, "", reward=0.5 * correct, correct=correct, hacked=hacked, coverage=coverage)


def test_batch_flags_follow_the_configured_ramp():
    # threshold 0.5, factor 0.2: coverage 0.6 -> (0.6 - 0.5)/0.2 = 0.5; 0.45 -> 0 (always rejected);
    # 0.8 -> 1.5 clipped to 1 (always kept); the incorrect and the hacked turn are always kept
    batch = [
        Trajectory("a", 0, [_turn(True, 0.45), _turn(False, 0.0)]),
        Trajectory("a", 1, [_turn(True, 0.8), _turn(True, 0.0, hacked=True), _turn(True, 0.6)]),
    ]
    settings = PrsSettings(threshold=0.5, factor=0.2)
    rng = random.Random(3)
    flags = prs_keep_flags(batch, settings, rng)
    # one draw per turn in batch order; the fifth decides the p = 0.5 turn
    assert flags == [[False, True], [True, True, _draws(3, 5)[4] < 0.5]]
    assert rng.getstate() == _after(3, 5)  # exactly one draw per turn, whatever the verdict


def test_batch_flags_disabled_keep_everything_and_draw_nothing():
    batch = [Trajectory("a", 0, [_turn(True, 0.0), _turn(True, 0.0)])]
    rng = random.Random(3)
    assert prs_keep_flags(batch, PrsSettings(enabled=False), rng) == [[True, True]]
    assert rng.getstate() == random.Random(3).getstate()
    assert prs_keep_flags(batch, PrsSettings(), random.Random(3)) == [[False, False]]


def test_batch_flags_are_seeded():
    batch = [Trajectory("a", i, [_turn(True, 0.35) for _ in range(3)]) for i in range(20)]
    settings = PrsSettings()  # coverage 0.35 -> p = 0.5 on every turn
    first = prs_keep_flags(batch, settings, random.Random(11))
    assert first == prs_keep_flags(batch, settings, random.Random(11))
    assert first != prs_keep_flags(batch, settings, random.Random(12))
    assert 15 <= sum(map(sum, first)) <= 45  # of 60 draws at p = 0.5


def _draws(seed: int, count: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.random() for _ in range(count)]


def _after(seed: int, count: int) -> object:
    rng = random.Random(seed)
    for _ in range(count):
        rng.random()
    return rng.getstate()
