"""Fast@p, the choice of a task's generation, the turn curves and best-of-N, on hand-made
outcomes whose numbers are worked out in the comments."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from services.trainer.bench import metrics


@dataclass(frozen=True)
class Judged:
    task: str
    sample: int
    turn: int
    correct: bool
    reward: float = 0.0
    speedup: float | None = None
    hacked: bool = False


def test_fast_p_counts_every_task_and_only_correct_timed_generations() -> None:
    outcomes = [
        Judged("a", 0, 1, True, 1.0, speedup=1.3),  # fast at 0, 1 and 1.2
        Judged("b", 0, 1, True, 1.0, speedup=0.9),  # correct but slower: fast at 0 only
        Judged("c", 0, 1, False, 0.0, speedup=None, hacked=True),  # hacked: never fast
        Judged("d", 0, 1, False, 0.0, speedup=None),  # wrong
        Judged("e", 0, 1, True, 0.5, speedup=None),  # correct, not validly timed (CPU): fast at 0 only
    ]
    tasks = ["a", "b", "c", "d", "e", "missing"]
    fast = metrics.fast_p_of(outcomes, tasks)
    assert fast == pytest.approx({"0": 3 / 6, "1": 1 / 6, "1.2": 1 / 6, "1.5": 0, "2": 0, "3": 0})
    assert list(fast) == list(metrics.THRESHOLDS)
    assert metrics.fast_p_of([], tasks) == dict.fromkeys(metrics.THRESHOLDS, 0.0)
    # speedup must exceed p: exactly 1.0 is not fast at 1
    assert not metrics.is_fast(Judged("a", 0, 1, True, 1.0, speedup=1.0), 1.0)


def test_a_task_is_judged_by_its_best_generation() -> None:
    group = [
        Judged("a", 0, 1, False, 0.0),
        Judged("a", 0, 2, True, 1.0, speedup=1.1),
        Judged("a", 1, 1, True, 1.0, speedup=2.5),
        Judged("a", 2, 1, True, 1.0, speedup=2.5),  # a tie: the earlier sample wins
        Judged("a", 3, 1, False, 3.0, speedup=None, hacked=True),  # reward never beats correctness
    ]
    chosen = metrics.best(group)
    assert chosen is not None and (chosen.sample, chosen.turn) == (1, 1)
    assert metrics.best([]) is None
    # without correct generations, the highest reward, then the earliest
    failed = [Judged("a", 1, 1, False, 0.2), Judged("a", 0, 2, False, 0.2), Judged("a", 0, 1, False, 0.1)]
    worst = metrics.best(failed)
    assert worst is not None and (worst.sample, worst.turn) == (0, 2)


def test_geometric_mean_of_correct_speedups() -> None:
    chosen: dict[str, metrics.Outcome | None] = {
        "a": Judged("a", 0, 1, True, speedup=2.0),
        "b": Judged("b", 0, 1, True, speedup=0.5),
        "c": Judged("c", 0, 1, True, speedup=8.0),
        "d": Judged("d", 0, 1, False, speedup=None),
        "e": Judged("e", 0, 1, True, speedup=None),
        "f": None,
    }
    assert metrics.speedups_of_correct(chosen) == [2.0, 0.5, 8.0]
    assert metrics.geometric_mean([2.0, 0.5, 8.0]) == pytest.approx(2.0)  # (2 * 0.5 * 8) ** (1/3)
    assert metrics.geometric_mean([]) is None


def test_turn_curves_and_best_of_n() -> None:
    outcomes = [
        # task a, sample 0: wrong, then fast (1.5x); sample 1: fast (1.1x) then wrong
        Judged("a", 0, 1, False),
        Judged("a", 0, 2, True, 1.0, speedup=1.5),
        Judged("a", 1, 1, True, 1.0, speedup=1.1),
        Judged("a", 1, 2, False),
        # task b, sample 0 only, one turn: correct, slow
        Judged("b", 0, 1, True, 1.0, speedup=0.8),
    ]
    tasks = ["a", "b"]
    curves = metrics.turn_curves(outcomes, tasks)
    assert [t for t, _, _ in curves] == [1, 2]
    (_, last1, best1), (_, last2, best2) = curves
    # turn 1: sample 0 has b correct (0.5 at p=0, 0 at 1); sample 1 has a fast (0.5 at 0 and 1)
    assert last1["0"] == pytest.approx((0.5 + 0.5) / 2) and last1["1"] == pytest.approx((0 + 0.5) / 2)
    assert best1 == last1
    # the last kernel by turn 2: sample 0 has a (1.5x) and b (its history ended at turn 1:
    # 0.8x, fast at 0 only); sample 1 has nothing correct
    assert last2["0"] == pytest.approx((1.0 + 0) / 2) and last2["1.2"] == pytest.approx(0.25)
    # best so far at turn 2: sample 0 has a (1.5x) and b; sample 1 has a (1.1x)
    assert best2["0"] == pytest.approx((1.0 + 0.5) / 2)
    assert best2["1"] == pytest.approx((0.5 + 0.5) / 2)
    assert best2["1.2"] == pytest.approx((0.5 + 0) / 2)
    points = dict(metrics.best_of_n(outcomes, tasks))
    assert points[1]["1.2"] == pytest.approx(0.5) and points[1]["0"] == pytest.approx(1.0)
    assert points[2] == metrics.fast_p_of(outcomes, tasks)  # N = all samples is the headline number


def test_a_history_that_stops_early_keeps_its_last_kernel() -> None:
    """A harness that stops refining once a kernel is correct: task a is solved at turn 1 and
    has no turn 2 or 3; task b is solved at turn 3 after a gap. The last-turn curve must not
    drop at turn 2 for a's early stop."""
    outcomes = [
        Judged("a", 0, 1, True, 1.0),
        Judged("b", 0, 1, False),
        Judged("b", 0, 3, True, 1.0),
    ]
    last = [round(point["0"], 3) for _, point, _ in metrics.turn_curves(outcomes, ["a", "b", "c"])]
    assert last == [0.333, 0.333, 0.667]  # c never has a generation
    assert metrics.latest(outcomes) == [outcomes[0], outcomes[2]]


def test_another_baseline_is_read_through_its_speed() -> None:
    @dataclass(frozen=True)
    class WithCompile(Judged):
        speedup_compile: float | None = None

    outcomes = [
        WithCompile("a", 0, 1, True, 1.0, speedup=2.0, speedup_compile=0.9),
        WithCompile("a", 1, 1, True, 1.0, speedup=1.5, speedup_compile=1.3),
    ]

    def compiled(outcome: metrics.Outcome) -> float | None:
        assert isinstance(outcome, WithCompile)
        return outcome.speedup_compile

    assert metrics.fast_p_of(outcomes, ["a"], compiled)["1.2"] == 1.0
    assert metrics.fast_p_of(outcomes, ["a"])["1.5"] == 1.0
