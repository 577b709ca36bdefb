"""A CUDA graph captured in a checked call, replayed later: the PyTorch trace takes its recorded
steps in order (services/sandbox/candidate/captured.py, trace.py ``replayed``).

CUDA graphs need a GPU. Here the trace records a "capture" while it is told a graph is being
captured, and PyTorch runs the captured operators on the CPU at once, which leaves the values a
replay would leave; the kernel's captured launch is the step the work probe records (with the
tensors its compiled code can write), its writes done by hand. The real path runs on the GPU
through tests/sandbox/hacks_gpu/graph_replay_discard.py and legit/cuda_graph_inside.py.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import _disable_current_modes

from services.sandbox.candidate.captured import CapturedLaunch, captured_work
from services.sandbox.candidate.trace import PyTorchTrace
from services.sandbox.shared.tensor_bits import Snapshot

N = 4096


class _Capture:
    """The graph the trace is told is being captured, if any."""

    def __init__(self) -> None:
        self.graph: Any = None


def _kernel(writes: tuple[torch.Tensor, ...], compute: Callable[[], None]) -> Callable[[Any], None]:
    """A captured launch of the candidate's kernel: recorded with what it can write; ``compute``
    does its work (what the replay would run)."""

    def launch(graph: Any) -> None:
        captured_work(graph).steps.append(CapturedLaunch(writes))
        with _disable_current_modes():
            compute()

    return launch


def _call(
    body: Callable[[Callable[[], None]], None],
    launches: list[Callable[[Any], None]],
    static_in: torch.Tensor,
    static_out: torch.Tensor,
) -> tuple[list[str], list[int]]:
    """One checked call: the input copied into the static input, the graph captured (``body``
    runs PyTorch operators and calls ``launch`` for each captured launch), replayed, and a copy
    of the static output returned. What the trace says of that output."""
    capture = _Capture()
    trace = PyTorchTrace(lambda: 0, _disable_current_modes, lambda: capture.graph)
    x = torch.randn(N)
    trace.begin([(x, Snapshot(x))])
    graph = types.SimpleNamespace()
    with trace:
        static_in.copy_(x)
        capture.graph = graph
        body(lambda: launches.pop(0)(graph))
        capture.graph = None
        trace.replayed(captured_work(graph))
        out = static_out.clone()
    return [match.operator for match in trace.matches([out])], trace.unseen([out])


def test_pytorch_beside_a_discarded_kernel_in_a_graph_is_pytorchs_work() -> None:
    """graph_replay_discard: the kernel writes a scratch buffer nobody reads, PyTorch computes
    the output inside the same graph."""
    static_in, scratch, static_out = torch.empty(N), torch.empty(N), torch.empty(N)
    kernel = _kernel((scratch,), lambda: scratch.copy_(static_in.relu()))

    def body(launch: Callable[[], None]) -> None:
        launch()
        static_out.copy_(torch.relu(static_in))

    matches, unseen = _call(body, [kernel], static_in, static_out)
    assert matches and unseen == []
    assert "replayed from a CUDA graph" in matches[0] or "clone" in matches[0]


def test_a_kernel_writing_the_static_output_is_the_kernels_work() -> None:
    """legit/cuda_graph_inside: the kernel reads the static input, writes the static output."""
    static_in, static_out = torch.empty(N), torch.empty(N)
    kernel = _kernel((static_out,), lambda: static_out.copy_(static_in.relu()))
    matches, unseen = _call(lambda launch: launch(), [kernel], static_in, static_out)
    assert matches == [] and unseen == []


def test_pytorch_finishing_the_kernels_result_in_a_graph_is_the_kernels_work() -> None:
    """An epilogue captured after the kernel, out of place and in place: derived from its result."""
    static_in, partial, static_out = torch.empty(N), torch.empty(N), torch.empty(N)
    bias = torch.randn(N)
    kernel = _kernel((partial,), lambda: partial.copy_(static_in * 3))

    def body(launch: Callable[[], None]) -> None:
        launch()
        partial.add_(bias)
        static_out.copy_(torch.tanh(partial))

    matches, unseen = _call(body, [kernel], static_in, static_out)
    assert matches == [] and unseen == []


def test_a_kernel_overwriting_what_pytorch_wrote_in_the_graph_is_the_kernels_work() -> None:
    """PyTorch fills the output first (a default), the kernel then writes all of it."""
    static_in, static_out = torch.empty(N), torch.empty(N)
    kernel = _kernel((static_out,), lambda: static_out.copy_(static_in.sigmoid()))

    def body(launch: Callable[[], None]) -> None:
        static_out.copy_(torch.relu(static_in))
        launch()

    matches, unseen = _call(body, [kernel], static_in, static_out)
    assert matches == [] and unseen == []


def test_a_launch_whose_writes_are_unknown_makes_everything_it_was_given_the_kernels() -> None:
    """The compiled code could not be read (kernel_stores.py says unknown): the launch may
    write all its arguments, so what PyTorch computes from them is not held against it."""
    static_in, scratch, static_out = torch.empty(N), torch.empty(N), torch.empty(N)
    kernel = _kernel((static_in, scratch), lambda: scratch.copy_(static_in.relu()))

    def body(launch: Callable[[], None]) -> None:
        launch()
        static_out.copy_(torch.relu(static_in))

    matches, unseen = _call(body, [kernel], static_in, static_out)
    assert matches == [] and unseen == []


def test_pytorch_overwriting_the_kernels_whole_result_in_a_graph_is_pytorchs_work() -> None:
    """The kernel writes the static output, then PyTorch copies its own result over all of it:
    no knock-out can reach into a replay to show the kernel's result was lost."""
    static_in, static_out = torch.empty(N), torch.empty(N)
    kernel = _kernel((static_out,), lambda: static_out.copy_(static_in.relu()))

    def body(launch: Callable[[], None]) -> None:
        launch()
        static_out.copy_(torch.relu(static_in))

    matches, unseen = _call(body, [kernel], static_in, static_out)
    assert matches and unseen == []


def test_pytorch_copying_into_part_of_the_kernels_result_leaves_it_the_kernels() -> None:
    """A remainder row copied in by PyTorch: the rest of the tensor is still the kernel's."""
    static_in, static_out = torch.empty(N), torch.empty(N)
    kernel = _kernel((static_out,), lambda: static_out.copy_(static_in.relu()))

    def body(launch: Callable[[], None]) -> None:
        launch()
        static_out[-16:].copy_(torch.relu(static_in[-16:]))

    matches, unseen = _call(body, [kernel], static_in, static_out)
    assert matches == [] and unseen == []
