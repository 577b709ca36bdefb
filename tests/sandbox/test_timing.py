"""Timing statistics and output fingerprints."""

from __future__ import annotations

import statistics

import pytest
import torch

from services.sandbox.timing import Clock, fingerprint, fingerprints_agree, summarize


def test_summary_statistics_worked_by_hand():
    samples = [10.0, 11.0, 12.0, 13.0, 100.0, 9.0, 10.5, 11.5, 12.5, 10.0]
    stats = summarize(samples, trim_fraction=0.1)
    assert stats.trials == 10
    assert stats.median_us == pytest.approx(11.25)
    assert stats.min_us == 9.0 and stats.max_us == 100.0
    # Trimming 10% drops the fastest (9.0) and the slowest (100.0).
    assert stats.trimmed_mean_us == pytest.approx(sum(sorted(samples)[1:-1]) / 8)
    assert stats.mean_us == pytest.approx(sum(samples) / 10)
    assert stats.coefficient_of_variation == pytest.approx(statistics.stdev(samples) / stats.mean_us)


def test_fingerprints_catch_stale_outputs_but_allow_rounding():
    torch.manual_seed(0)
    reference = torch.randn(1000)
    rounded = reference + 1e-4 * torch.randn(1000)
    stale = torch.randn(1000)
    numels = [1000]
    assert fingerprints_agree(fingerprint([rounded]), fingerprint([reference]), numels, 1e-2, 1e-2)
    assert not fingerprints_agree(fingerprint([stale]), fingerprint([reference]), numels, 1e-2, 1e-2)
    nan = reference.clone()
    nan[3] = float("nan")
    assert not fingerprints_agree(fingerprint([nan]), fingerprint([reference]), numels, 1e-2, 1e-2)


def test_cpu_clock_reports_wall_time_per_call():
    clock = Clock(torch.device("cpu"), l2_flush_bytes=0)
    one = clock.time([lambda: sum(range(200_000))])
    assert one.outputs == [sum(range(200_000))]
    assert one.stream_us > 0 and one.stream_us == one.device_us
    four = clock.time([lambda n=n: sum(range(200_000 + n)) for n in range(4)])
    assert len(four.outputs) == 4
    assert 0.25 * one.stream_us < four.stream_us < 4 * one.stream_us
