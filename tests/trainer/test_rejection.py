"""PRS on hand-worked probabilities and seeded draws."""

from __future__ import annotations

import random

import pytest

from services.trainer.rejection import PrsSettings, prs_keep, prs_keep_probability


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
