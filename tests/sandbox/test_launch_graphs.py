"""CUDA graph replays count the Triton launches their capture recorded, and every compiled
launch says why the work probe cannot watch it, if it cannot (services/sandbox/candidate/launches.py).

CUDA graphs need a GPU: here the capture and replay methods belong to a stand-in class (a named
fake of torch.cuda.CUDAGraph, whose own methods raise without CUDA) and the current stream is
a fixed number; the launches themselves go through the recorder's real bookkeeping. The real
path runs on the GPU through tests/sandbox/legit/cuda_graph_inside.py (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
import torch
from triton.runtime.jit import JITFunction

from services.sandbox.candidate.harness import launched_outside_capture
from services.sandbox.candidate.launches import LaunchRecorder, launch_path
from services.sandbox.wire.judge_candidate import LaunchRecord, Unwatched

OWN = "/candidate/module.py"


class FakeCudaGraph:
    """Stands in for torch.cuda.CUDAGraph: capture and replay do nothing on a CPU."""

    def capture_begin(self, *args: Any, **kwargs: Any) -> None: ...

    def capture_end(self) -> None: ...

    def replay(self) -> None: ...


class _Stream:
    cuda_stream = 7


def _launch_metadata(recorder: LaunchRecorder, name: str, filename: str, grid: tuple[int, ...]) -> None:
    """Stands in for the recorder's CompiledKernel.launch_metadata wrapper (which needs a GPU)."""
    recorder._record(name, filename, grid, None, 3)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> LaunchRecorder:
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **k: _Stream())
    recorder = LaunchRecorder(OWN, stored_bytes=lambda: 0)
    recorder.install_graph_hooks(FakeCudaGraph)
    recorder._writers = frozenset({_launch_metadata.__code__})  # as install() allows its wrappers
    return recorder


def test_every_replay_counts_the_kernels_its_capture_launched(recorder: LaunchRecorder) -> None:
    graph = FakeCudaGraph()
    graph.capture_begin()
    _launch_metadata(recorder, "relu_kernel", OWN, (4,))
    _launch_metadata(recorder, "torch_helper", "/elsewhere.py", (1,))
    graph.capture_end()
    recorder.take()
    for _ in range(2):
        graph.replay()
        launches = recorder.take()
        assert [(r.name, r.own, r.programs, r.stream, r.unwatched) for r in launches] == [
            ("relu_kernel", True, 4, 7, "replay"),
            ("torch_helper", False, 1, 7, "replay"),
        ]


def test_launches_outside_a_capture_are_not_replayed(recorder: LaunchRecorder) -> None:
    _launch_metadata(recorder, "before", OWN, (2,))
    graph = FakeCudaGraph()
    graph.capture_begin()
    graph.capture_end()
    _launch_metadata(recorder, "after", OWN, (2,))
    recorder.take()
    graph.replay()
    assert recorder.take() == []


def test_a_record_added_by_other_code_is_refused_and_reported(recorder: LaunchRecorder) -> None:
    # a candidate that reaches the recorder up its own stack and records launches of its kernel
    recorder._record("relu_kernel", OWN, (4,), None, 3)
    assert recorder.take() == []
    [finding] = recorder.take_findings()
    assert "outside Triton's launch paths" in finding
    assert recorder.take_findings() == []
    _launch_metadata(recorder, "relu_kernel", OWN, (4,))
    assert [r.name for r in recorder.take()] == ["relu_kernel"] and recorder.take_findings() == []


def _triton_run(launch_metadata: Callable[[], Unwatched | None]) -> Unwatched | None:
    """Stands in for Triton's JITFunction.run (which needs a GPU driver): calls launch_metadata itself."""
    return launch_metadata()


_triton_run.__module__ = "triton.runtime.jit"


@pytest.mark.parametrize(("capturing", "expected"), [(False, None), (True, "capture")])
def test_a_launch_through_jitfunction_run_is_the_probes_to_watch_unless_captured(
    capturing: bool, expected: Unwatched | None
) -> None:
    unwatched = launch_path(_triton_run, sys._getframe, lambda: capturing)

    def launch_metadata() -> Unwatched | None:  # the recorder's wrapper, as Triton calls it
        return unwatched()

    assert _triton_run(launch_metadata) == expected


@pytest.mark.parametrize("capturing", [False, True])
def test_a_compiled_kernel_launched_directly_is_unwatched(capturing: bool) -> None:
    """CompiledKernel[grid](...) calls launch_metadata from its own runner, not from JITFunction.run."""
    unwatched = launch_path(_triton_run, sys._getframe, lambda: capturing)

    def launch_metadata() -> Unwatched | None:
        return unwatched()

    def runner() -> Unwatched | None:
        return launch_metadata()

    assert runner() == "direct"


def test_the_path_is_told_from_tritons_own_run_only() -> None:
    """Installed after something wrapped JITFunction.run (the work probe), the recorder would
    take every launch for a direct one: it refuses instead."""
    launch_path(JITFunction.run, sys._getframe, lambda: False)

    def wrapped(*args: Any, **kwargs: Any) -> Any: ...

    with pytest.raises(RuntimeError, match="install the recorder first"):
        launch_path(wrapped, sys._getframe, lambda: False)


def test_own_launches_not_recorded_into_the_capture_make_it_incomplete() -> None:
    """A thread's launch during the judge's capture runs at once on the thread's stream: the
    graph lacks it, and replaying it would time (and return) nothing of that work."""
    captured = LaunchRecord(name="relu_kernel", own=True, programs=4, unwatched="capture")
    from_thread = LaunchRecord(name="relu_kernel", own=True, programs=4)
    library = LaunchRecord(name="torch_helper", own=False, programs=1)
    assert launched_outside_capture([captured, library]) == 0
    assert launched_outside_capture([captured, from_thread, from_thread]) == 2
