"""What an interpreted launch is charged with in CPU profiles: distinct bytes, capped FLOPs
(services/sandbox/candidate/bounds.py), on numbers worked by hand."""

from __future__ import annotations

import numpy as np

from services.sandbox.candidate.bounds import DOT_REUSE, LaunchWork


def _launch() -> LaunchWork:
    # two tensors of 16 float32 each, as byte ranges of memory
    return LaunchWork("k", [("x", 1000, 1064), ("y", 2000, 2064)])


def test_reading_an_input_again_costs_nothing_more():
    launch = _launch()
    offsets = np.arange(0, 64, 4, dtype=np.int64)
    for _ in range(64):
        launch.touch(0, offsets, 4, load=True)
    launch.touch(1, offsets, 4, load=False)
    assert launch.distinct_bytes == 64 + 64
    assert launch.distinct_elements == {"load": 16, "store": 16}


def test_repeats_within_one_access_count_once_and_reads_and_writes_of_one_element_both_count():
    launch = _launch()
    launch.touch(0, np.array([0, 0, 4, 4, 8], dtype=np.int64), 4, load=True)  # a broadcast load
    launch.touch(0, np.array([0, 4], dtype=np.int64), 4, load=False)  # written back in place
    assert launch.distinct_bytes == 3 * 4 + 2 * 4


def test_dot_flops_are_capped_by_what_the_launch_read_and_wrote():
    launch = _launch()
    launch.distinct_elements = {"load": 2 * 64 * 32, "store": 64 * 64}  # A 64x32 and B 32x64 in, C 64x64 out
    launch.dot_flops = 2 * 64 * 64 * 32  # one honest matrix product: under the cap
    assert launch.useful_flops() == 2 * 64 * 64 * 32
    launch.dot_flops *= 1000  # the same tiles multiplied again and again
    assert launch.useful_flops() == int(DOT_REUSE * 64 * (2 * 64 * 32))
