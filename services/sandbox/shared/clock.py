"""Timing forward calls and checking what timed calls returned.

The judge times the reference and the candidate's process times the candidate with this same
code, trial by trial, interleaved. On a GPU a trial is: fresh inputs; reset any persisting-L2
carve-out; flush L2 by writing a large buffer; synchronise the device; a short spin kernel
(``LEAD_US``); record a CUDA event; forward; record an event on the current stream.
``stream_us`` (first to second event) is the measurement. The spin keeps the GPU busy while the
host queues the start event and the first launches behind it, so that how quickly this
process's thread gets a core back after the synchronisation (a busy host, other processes
starting) is not measured: for a trial of a few hundred microseconds that jitter alone was
several percent. A trial of one call (a call long enough to fill a trial alone) spins longer
(``ONE_CALL_LEAD_US``): a call that long hides the host time of one forward in any pipeline,
and that host time, 190-380 us for a Triton launch on an H100 host, outlasted a 200 us spin, so
that its jitter was measured (the KernelBench ReLU solution's trials spread over 1% with a 200
us spin, over 0.1% with 1 ms). Then the clock asks whether device work the model started is
still running once the timed stream has finished: an event is recorded on every other stream
its own kernels were launched on or its code made current (streams.StreamWatch), and
``late_us`` is how much later than the timed stream the last of them completes. Device
timestamps only: a slow kernel on the timed stream, however slow, leaves nothing running, and
no host-side delay (another process starting on the same GPU, say) can make an honest model
look late.

Launch-bound models run several calls back to back per trial. Where they can be captured,
those calls are captured once as a CUDA graph over static inputs (``GraphedCalls``): each
trial copies fresh inputs in and replays the graph, so the times are device time without
Python's launch overhead, for reference and candidate alike. A replay is one launch, so the
host's part of it must end before the spin does: the clock checks that it did, and a trial
whose replay outlasted the spin (the process descheduled, or CUPTI's callbacks: 280 us for a
270-node graph on an H100) is run again with a longer spin, which later trials keep until
replays are quick again.

Every function used is captured when the clock is built, before candidate code runs, so
patching timers cannot change a measurement.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

_CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
# Device time the spin before each trial's start event lasts: trials of several calls, and
# trials of one call (module docstring).
LEAD_US = 200.0
ONE_CALL_LEAD_US = 1000.0
# The longest spin before a graph replay, and how many times a trial whose replay outlasted
# its spin is run (module docstring).
MAX_GRAPH_LEAD_US = 20_000.0
_GRAPH_ATTEMPTS = 3
_CALIBRATION_CYCLES = 1_000_000


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


def superseded(calls: Sequence[Sequence[torch.Tensor]]) -> list[bool]:
    """For each output of each call (call-major), whether a later call of the same trial
    returned a tensor in the same memory. A model that reuses one output buffer (allocated
    once, overwritten every call: honest, and common) leaves only the last call's values
    there, so only the last writer of each buffer can be checked."""
    flags = []
    for index, outputs in enumerate(calls):
        later = {_storage(t) for call in calls[index + 1 :] for t in call}
        flags.extend(_storage(t) in later for t in outputs)
    return flags


def _storage(tensor: torch.Tensor) -> tuple[str, int]:
    return (str(tensor.device), tensor.untyped_storage().data_ptr())


@dataclass(frozen=True)
class TrialTiming:
    """One timed trial: microseconds per forward call, how long device work the model
    started kept running after the timed stream finished, and each call's outputs."""

    stream_us: float
    late_us: float
    outputs: list[Any]
    reruns: int = 0  # times the trial was run again because the host outlasted the spin


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
        self._external_stream = torch.cuda.ExternalStream
        self._new_event = torch.cuda.Event
        self._spin: Callable[[int], None] = torch.cuda._sleep

    def prepare(self) -> None:
        """Allocates the events and the L2 flush buffer (creates the CUDA context)."""
        if not self._cuda:
            return
        self._stream = self._current_stream(self.device)
        self._start, self._end = (self._new_event(enable_timing=True) for _ in range(2))
        self._stream_events: list[Any] = []
        self._flush = torch.empty(max(self._l2_flush_bytes, 1), dtype=torch.uint8, device=self.device)
        self._reset_persisting_l2 = _persisting_l2_reset()
        self._cycles_per_us = self._spin_cycles_per_us()
        self._graph_lead_us = LEAD_US

    def _spin_cycles_per_us(self) -> float:
        """Spin-kernel cycles per microsecond on this GPU (measured, not taken from the
        nominal clock, which boosting changes)."""
        self._spin(_CALIBRATION_CYCLES // 10)  # first launch loads the kernel
        self._record(self._start, self._stream)
        self._spin(_CALIBRATION_CYCLES)
        self._record(self._end, self._stream)
        self._device_sync()
        return _CALIBRATION_CYCLES / max(self._elapsed_ms(self._start, self._end) * 1e3, 1e-3)

    def time(
        self,
        run: Callable[[], list[Any]],
        calls: int,
        streams_used: Callable[[], Iterable[int]] = tuple,
        *,
        graph: bool = False,
    ) -> TrialTiming:
        """Times ``run`` (which makes ``calls`` forward calls and returns their outputs);
        times are per call. ``streams_used`` names the raw CUDA streams the model's own
        kernels were launched on during the run (from the launch recorder). ``graph``: ``run``
        replays a captured graph, and is run again where its launch outlasted the spin."""
        collecting = gc.isenabled()
        gc.disable()  # a collection inside the timed region would be charged to the kernel
        try:
            if not self._cuda:
                start = self._perf_counter()
                outputs = run()
                return TrialTiming((self._perf_counter() - start) * 1e6 / calls, 0.0, outputs)
            if not graph:
                return self._time(run, calls, streams_used, ONE_CALL_LEAD_US if calls == 1 else LEAD_US)[0]
            return self._time_replay(run, calls, streams_used)
        finally:
            if collecting:
                gc.enable()

    def _time_replay(
        self, run: Callable[[], list[Any]], calls: int, streams_used: Callable[[], Iterable[int]]
    ) -> TrialTiming:
        """A graph replay's trial, with a spin that outlasts the replay's launch: a trial
        whose launch took longer than half its spin is run again with twice the spin the
        launch took (at most MAX_GRAPH_LEAD_US, _GRAPH_ATTEMPTS runs); the spin is kept for
        later trials, and halved again once launches take under a quarter of it."""
        lead_us = self._graph_lead_us
        for attempt in range(_GRAPH_ATTEMPTS):
            timed, host_us = self._time(run, calls, streams_used, lead_us)
            if host_us <= lead_us / 2 or lead_us >= MAX_GRAPH_LEAD_US or attempt == _GRAPH_ATTEMPTS - 1:
                break
            lead_us = min(MAX_GRAPH_LEAD_US, 2 * host_us)
        self._graph_lead_us = max(LEAD_US, lead_us / 2) if host_us < lead_us / 4 else lead_us
        return replace(timed, reruns=attempt)

    def _time(
        self, run: Callable[[], list[Any]], calls: int, streams_used: Callable[[], Iterable[int]], lead_us: float
    ) -> tuple[TrialTiming, float]:
        """One trial after a spin of ``lead_us``, and the host's microseconds from queuing
        the start event to ``run`` returning."""
        start, end = self._start, self._end
        self._reset_persisting_l2()
        self._zero(self._flush)
        self._device_sync()
        self._spin(int(self._cycles_per_us * lead_us))
        queued = self._perf_counter()
        self._record(start, self._stream)
        outputs = run()
        host_us = (self._perf_counter() - queued) * 1e6
        self._record(end, self._stream)
        others = self._mark_other_streams(streams_used)
        self._device_sync()
        end_ms = self._elapsed_ms(start, end)
        late_ms = max((self._elapsed_ms(start, event) - end_ms for event in others), default=0.0)
        return TrialTiming(end_ms * 1e3 / calls, max(late_ms * 1e3, 0.0), outputs), host_us

    def _mark_other_streams(self, streams_used: Callable[[], Iterable[int]]) -> list[Any]:
        """An event on every stream other than the timed one that the model used, recorded
        now: it completes when that stream's work, queued before it, is done."""
        current = self._current_stream(self.device)
        handles = {int(h) for h in streams_used()} | {current.cuda_stream}
        handles.discard(self._stream.cuda_stream)
        while len(self._stream_events) < len(handles):
            self._stream_events.append(self._new_event(enable_timing=True))
        events = self._stream_events[: len(handles)]
        for event, handle in zip(events, sorted(handles), strict=False):
            stream = current if handle == current.cuda_stream else self._external_stream(handle, device=self.device)
            self._record(event, stream)
        return events


class GraphedCalls:
    """``calls`` forward calls captured once as one CUDA graph over static inputs.

    Each trial copies fresh input values into the static inputs (outside the timed region)
    and replays the graph: one launch for all the calls, so a launch-bound model is timed by
    its device work. Capture fails, and the caller falls back to eager calls, for code that
    cannot be captured (host synchronisation, host-side values, unjoined side streams). A
    failed capture must leave the process as it was: the capture is ended on its own stream
    whatever forward did to the current stream, the current stream is restored, and so is
    the CUDA random generator (whose state a failed capture leaves marked as capturing, so
    that every later random op would fail).
    """

    def __init__(
        self, forward: Callable[[list[Any]], list[torch.Tensor]], input_sets: list[list[Any]], device: torch.device
    ) -> None:
        self.inputs = input_sets
        self.graph = torch.cuda.CUDAGraph()
        generator = torch.cuda.default_generators[device.index or 0]
        saved_rng = generator.clone_state()  # a copy: graphsafe_get_state shares the live state
        original = torch.cuda.current_stream(device)
        stream = torch.cuda.Stream(device)
        torch.cuda.synchronize(device)
        stream.wait_stream(original)
        torch.cuda.set_stream(stream)
        ended = False
        try:
            self.graph.capture_begin()
            try:
                self.outputs = [forward(inputs) for inputs in input_sets]
            finally:
                torch.cuda.set_stream(stream)  # forward may have switched it; the capture ends here
                self.graph.capture_end()
                ended = True
        finally:
            torch.cuda.set_stream(original)
            if not ended:
                generator.graphsafe_set_state(saved_rng)
                with contextlib.suppress(RuntimeError):
                    self.graph.reset()
        torch.cuda.synchronize(device)

    def refill(self, input_sets: list[list[Any]]) -> None:
        """Copies fresh values into the static inputs (same shapes, dtypes and devices)."""
        with torch.no_grad():
            for static, fresh in zip(self.inputs, input_sets, strict=False):
                for target, value in zip(static, fresh, strict=False):
                    if isinstance(target, torch.Tensor):
                        target.copy_(value)

    def replay(self) -> list[list[torch.Tensor]]:
        self.graph.replay()
        return self.outputs


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
