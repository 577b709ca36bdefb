"""MRS on hand-worked log-ratios: trajectory window, per-row veto, clamp, statistics."""

from __future__ import annotations

import math

import pytest

from services.trainer.mismatch import mrs_decisions
from services.trainer.rows import TrainingRow
from services.trainer.run_config import MrsSettings

SAMPLER = -1.0  # every sampler log-prob; the learner's is SAMPLER + the wanted log-ratio


def _row(trajectory: int, turn: int, log_ratios: list[float]) -> tuple[TrainingRow, list[float]]:
    row = TrainingRow(
        prompt_ids=[0],
        completion_ids=list(range(len(log_ratios))),
        sampler_logprobs=[SAMPLER] * len(log_ratios),
        advantage=1.0,
        keep=True,
        trajectory=trajectory,
        turn=turn,
    )
    return row, [SAMPLER + r for r in log_ratios]


def _split(pairs: list[tuple[TrainingRow, list[float]]]) -> tuple[list[TrainingRow], list[list[float]]]:
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _step() -> tuple[list[TrainingRow], list[list[float]]]:
    """Three trajectories, five rows, ten tokens (log-ratios per token):
    trajectory 0: turn 0 [+0.004], turn 1 [-0.001] * 4
        token mean (0.004 - 0.004) / 5 = 0 -> w = 1, kept. (The mean of the two rows' means,
        (0.004 - 0.001) / 2 = 0.0015 -> 1.0015, would reject it: the mean is over tokens.)
    trajectory 1: turn 0 [+0.002, +0.002] -> w = exp(0.002) = 1.002 > 1.001, rejected
    trajectory 2: turn 0 [-10, 0], turn 1 [+10] -> mean 0, w = 1, kept; but exp(-10) = 4.5e-5 < 1e-4
        vetoes turn 0 only
    """
    return _split(
        [
            _row(0, 0, [0.004]),
            _row(0, 1, [-0.001] * 4),
            _row(1, 0, [0.002, 0.002]),
            _row(2, 0, [-10.0, 0.0]),
            _row(2, 1, [10.0]),
        ]
    )


def test_trajectory_window_and_per_row_veto():
    rows, learner = _step()
    result = mrs_decisions(rows, learner, MrsSettings())
    assert result.keep == [True, True, False, False, True]
    assert result.trajectory_rejected_rate == pytest.approx(1 / 3)
    assert result.veto_rate == pytest.approx(1 / 5)
    # |log-ratio| summed: 0.004 + 4 * 0.001 + 2 * 0.002 + 10 + 0 + 10 = 20.012, over 10 tokens
    assert result.logprob_mismatch == pytest.approx(2.0012)


def test_disabled_keeps_everything_but_reports():
    rows, learner = _step()
    result = mrs_decisions(rows, learner, MrsSettings(enabled=False))
    assert result.keep == [True] * 5
    assert (result.trajectory_rejected_rate, result.veto_rate) == pytest.approx((1 / 3, 1 / 5))
    assert result.logprob_mismatch == pytest.approx(2.0012)


def test_window_bounds_are_inclusive_and_configurable():
    # log-ratio 0.0005 -> w = 1.0005: inside [0.999, 1.001]; outside [0.9995, 1.0004]
    rows, learner = _split([_row(0, 0, [0.0005])])
    assert mrs_decisions(rows, learner, MrsSettings()).keep == [True]
    assert mrs_decisions(rows, learner, MrsSettings(lower=0.9995, upper=1.0004)).keep == [False]
    # w = 1 exactly with lower = upper = 1 is kept (both bounds inclusive)
    rows, learner = _split([_row(0, 0, [0.0])])
    assert mrs_decisions(rows, learner, MrsSettings(lower=1.0, upper=1.0)).keep == [True]


def test_mean_log_ratio_is_clamped_before_exp():
    # mean 50 -> clamped to 20 -> w = exp(20) = 4.85e8 <= 1e9: kept (unclamped exp(50) = 5.2e21 would not be)
    rows, learner = _split([_row(0, 0, [50.0])])
    assert mrs_decisions(rows, learner, MrsSettings(upper=1e9)).keep == [True]
    # clamp 30: exp(30) = 1.07e13 > 1e9, rejected
    assert mrs_decisions(rows, learner, MrsSettings(upper=1e9, log_clamp=30.0)).keep == [False]
    # and a huge positive ratio is neither a veto nor an overflow
    rows, learner = _split([_row(0, 0, [1000.0])])
    assert mrs_decisions(rows, learner, MrsSettings(upper=math.inf)).keep == [True]


def test_veto_threshold():
    # log(1e-4) = -9.2103: a token at -9.2 (ratio 1.01e-4) does not veto, one at -9.3 (9.1e-5) does;
    # the +9.2 / +9.3 tokens bring each trajectory's mean back to 0
    rows, learner = _split([_row(0, 0, [-9.2, 9.2]), _row(1, 0, [-9.3, 9.3])])
    assert mrs_decisions(rows, learner, MrsSettings()).keep == [True, False]
    # veto ratio 0 never vetoes
    result = mrs_decisions(rows, learner, MrsSettings(veto_ratio=0.0))
    assert result.keep == [True, True] and result.veto_rate == 0.0


def test_rows_without_tokens_and_empty_steps():
    rows, learner = _split([_row(0, 0, []), _row(0, 1, [])])
    result = mrs_decisions(rows, learner, MrsSettings())
    assert result.keep == [True, True]  # no tokens, no evidence of a mismatch: w = 1
    assert (result.trajectory_rejected_rate, result.veto_rate, result.logprob_mismatch) == (0.0, 0.0, 0.0)
    empty = mrs_decisions([], [], MrsSettings())
    assert empty.keep == [] and empty.trajectory_rejected_rate == 0.0 and empty.logprob_mismatch == 0.0


def test_lengths_are_validated():
    rows, learner = _step()
    with pytest.raises(ValueError, match="4 rows, expected 5"):
        mrs_decisions(rows, learner[:4], MrsSettings())
    learner[1] = learner[1][:3]
    with pytest.raises(ValueError, match=r"row 1 .*4 completion tokens, 4 sampler and 3 learner"):
        mrs_decisions(rows, learner, MrsSettings())
    rows, learner = _step()
    rows[0].sampler_logprobs.append(-1.0)
    with pytest.raises(ValueError, match=r"row 0 .*1 completion tokens, 2 sampler and 1 learner"):
        mrs_decisions(rows, learner, MrsSettings())
