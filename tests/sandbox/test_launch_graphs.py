"""CUDA graph replays count the Triton launches their capture recorded (services/sandbox/candidate/launches.py).

CUDA graphs need a GPU: here the capture and replay methods belong to a stand-in class (a named
fake of torch.cuda.CUDAGraph, whose own methods raise without CUDA) and the current stream is
a fixed number; the launches themselves go through the recorder's real bookkeeping. The real
path runs on the GPU through tests/sandbox/legit/cuda_graph_inside.py (docs/BENCHMARKS.md).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from services.sandbox.candidate.launches import LaunchRecorder

OWN = "/candidate/module.py"


class FakeCudaGraph:
    """Stands in for torch.cuda.CUDAGraph: capture and replay do nothing on a CPU."""

    def capture_begin(self, *args: Any, **kwargs: Any) -> None: ...

    def capture_end(self) -> None: ...

    def replay(self) -> None: ...


class _Stream:
    cuda_stream = 7


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> LaunchRecorder:
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **k: _Stream())
    recorder = LaunchRecorder(OWN, stored_bytes=lambda: 0)
    recorder.install_graph_hooks(FakeCudaGraph)
    return recorder


def test_every_replay_counts_the_kernels_its_capture_launched(recorder: LaunchRecorder) -> None:
    graph = FakeCudaGraph()
    graph.capture_begin()
    recorder._record("relu_kernel", OWN, (4,), None, 3)  # what launch_metadata does during capture
    recorder._record("torch_helper", "/elsewhere.py", (1,), None, 3)
    graph.capture_end()
    recorder.take()
    for _ in range(2):
        graph.replay()
        launches = recorder.take()
        assert [(r.name, r.own, r.programs, r.stream) for r in launches] == [
            ("relu_kernel", True, 4, 7),
            ("torch_helper", False, 1, 7),
        ]


def test_launches_outside_a_capture_are_not_replayed(recorder: LaunchRecorder) -> None:
    recorder._record("before", OWN, (2,), None, 3)
    graph = FakeCudaGraph()
    graph.capture_begin()
    graph.capture_end()
    recorder._record("after", OWN, (2,), None, 3)
    recorder.take()
    graph.replay()
    assert recorder.take() == []
