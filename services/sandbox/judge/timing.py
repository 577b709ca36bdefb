"""The statistics of timed trials."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from services.sandbox.shared.evaluation import RuntimeStats


def summarize(samples_us: Sequence[float], trim_fraction: float) -> RuntimeStats:
    """Robust statistics of timed runs (microseconds, unrounded)."""
    ordered = sorted(samples_us)
    count = len(ordered)
    cut = int(count * trim_fraction)
    trimmed = ordered[cut : count - cut] or ordered
    mean = statistics.fmean(ordered)
    stdev = statistics.stdev(ordered) if count > 1 else 0.0
    return RuntimeStats(
        trials=count,
        median_us=statistics.median(ordered),
        mean_us=mean,
        trimmed_mean_us=statistics.fmean(trimmed),
        min_us=ordered[0],
        max_us=ordered[-1],
        stdev_us=stdev,
        coefficient_of_variation=stdev / mean if mean > 0 else 0.0,
    )
