"""Timing forward calls, checking what timed calls returned, and the statistics of many.

The judge times the reference and the candidate's process times the candidate with this same
code, trial by trial, interleaved. On a GPU a trial is: fresh inputs; reset any persisting-L2
carve-out; flush L2 by writing a large buffer; synchronise the device; record a CUDA event;
forward; record an event on the current stream; synchronise the whole device; record a third
event. ``stream_us`` (first to second event) is the measurement; ``device_us`` (first to third)
includes work left running on other streams, which the judge compares between candidate and
reference to catch side-stream tricks. Every function used is captured when the clock is
built, before candidate code runs, so patching timers cannot change a measurement.
"""

from __future__ import annotations

import ctypes
import gc
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from drkernel.v1 import sandbox_pb2

_CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06


def summarize(samples_us: Sequence[float], trim_fraction: float) -> sandbox_pb2.RuntimeStats:
    """Robust statistics of timed runs (microseconds, unrounded)."""
    ordered = sorted(samples_us)
    count = len(ordered)
    cut = int(count * trim_fraction)
    trimmed = ordered[cut : count - cut] or ordered
    mean = statistics.fmean(ordered)
    stdev = statistics.stdev(ordered) if count > 1 else 0.0
    return sandbox_pb2.RuntimeStats(
        trials=count,
        median_us=statistics.median(ordered),
        mean_us=mean,
        trimmed_mean_us=statistics.fmean(trimmed),
        min_us=ordered[0],
        max_us=ordered[-1],
        stdev_us=stdev,
        coefficient_of_variation=stdev / mean if mean > 0 else 0.0,
    )


SAMPLES_PER_OUTPUT = 4096


def sample_values(outputs: Sequence[torch.Tensor], seed: int) -> list[torch.Tensor]:
    """Each output's values at positions drawn from ``seed`` (the same positions for the same
    seed and size in any process). The judge picks the seed only after a timed call has
    returned, then compares these values with the reference's at the same positions: a
    result that was cached, stale or computed differently while timed shows up at once."""
    samples = []
    for index, output in enumerate(outputs):
        flat = output.detach().reshape(-1)
        if flat.numel() == 0:
            samples.append(flat)
            continue
        generator = torch.Generator().manual_seed(seed + index)
        positions = torch.randint(0, flat.numel(), (min(SAMPLES_PER_OUTPUT, flat.numel()),), generator=generator)
        samples.append(flat[positions.to(flat.device)])
    return samples


@dataclass(frozen=True)
class TrialTiming:
    """One timed trial: microseconds per forward call and each call's outputs."""

    stream_us: float
    device_us: float
    outputs: list[Any]


class Clock:
    """Times forward calls with functions captured at construction.

    Construction touches no device, so that a process can be started (and captured) long
    before it may create a CUDA context; ``prepare()`` allocates the device state and must run
    before any candidate code does.
    """

    def __init__(self, device: torch.device, l2_flush_bytes: int) -> None:
        self.device = device
        self._perf_counter = time.perf_counter
        self._cuda = device.type == "cuda"
        self._l2_flush_bytes = l2_flush_bytes
        if not self._cuda:
            return
        base = torch._C._CudaEventBase
        self._record: Callable[[Any, Any], None] = base.record
        self._elapsed_ms: Callable[[Any, Any], float] = base.elapsed_time
        self._event_sync: Callable[[Any], None] = base.synchronize
        self._device_sync: Callable[[], None] = torch._C._cuda_synchronize
        self._zero: Callable[[torch.Tensor], Any] = torch._C.TensorBase.zero_
        self._current_stream = torch.cuda.current_stream
        self._new_event = torch.cuda.Event

    def prepare(self) -> None:
        """Allocates the events and the L2 flush buffer (creates the CUDA context)."""
        if not self._cuda:
            return
        self._stream = self._current_stream(self.device)
        self._events = [self._new_event(enable_timing=True) for _ in range(3)]
        self._flush = torch.empty(max(self._l2_flush_bytes, 1), dtype=torch.uint8, device=self.device)
        self._reset_persisting_l2 = _persisting_l2_reset()

    def time(self, runs: Sequence[Callable[[], Any]]) -> TrialTiming:
        """Runs the calls back to back under the clock; times are per call. Several calls
        per trial (each on its own inputs) keep launch-bound kernels above timer noise."""
        calls = len(runs)
        collecting = gc.isenabled()
        gc.disable()  # a collection inside the timed region would be charged to the kernel
        try:
            return self._time(runs, calls)
        finally:
            if collecting:
                gc.enable()

    def _time(self, runs: Sequence[Callable[[], Any]], calls: int) -> TrialTiming:
        if not self._cuda:
            start = self._perf_counter()
            outputs = [run() for run in runs]
            elapsed_us = (self._perf_counter() - start) * 1e6 / calls
            return TrialTiming(elapsed_us, elapsed_us, outputs)
        start, end, idle = self._events
        self._reset_persisting_l2()
        self._zero(self._flush)
        self._device_sync()
        self._record(start, self._stream)
        outputs = [run() for run in runs]
        self._record(end, self._stream)
        self._device_sync()
        self._record(idle, self._stream)
        self._event_sync(idle)
        return TrialTiming(
            self._elapsed_ms(start, end) * 1e3 / calls, self._elapsed_ms(start, idle) * 1e3 / calls, outputs
        )


def _persisting_l2_reset() -> Callable[[], None]:
    """Returns a function that removes any persisting-L2 carve-out (driver API), so that a
    candidate cannot keep its data in L2 across the flush."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return lambda: None
    set_limit, reset = driver.cuCtxSetLimit, driver.cuCtxResetPersistingL2Cache

    def reset_persisting_l2() -> None:
        set_limit(_CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(0))
        reset()

    return reset_persisting_l2
