"""What a CUDA graph captured during a checked call computes, kept for its replays.

While a graph is captured nothing runs: the kernels and PyTorch operators are recorded into it
and run at each replay, where neither the work probe (which compares a launch's arguments
before and after it) nor the PyTorch trace (a dispatch mode) sees them one by one. So the
capture is written down step by step as it happens: each launch of the candidate's own
kernels with the tensors it can write (its compiled code's stores, kernel_stores.py; all its
tensor arguments when unknown), and each PyTorch operator with its inputs and what it wrote.
A replay then takes the steps in order as the trace would have seen them run eagerly
(trace.py ``replayed``): a kernel's writes are the kernels' results, an operator with such an
input makes more of them, and what the other operators wrote is PyTorch's own work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass(frozen=True)
class CapturedLaunch:
    """A launch of the candidate's own kernel: the tensors it can write."""

    written: tuple[torch.Tensor, ...]


@dataclass(frozen=True)
class CapturedOperator:
    """A PyTorch operator: its tensor inputs, the tensors it wrote (its results and, for an
    in-place or out= operator, the inputs it mutated), and whether one of the candidate's
    kernels ran inside it (an operator whose body the trace cannot see)."""

    operator: str
    name: str  # the schema's name, "aten::relu"
    inputs: tuple[torch.Tensor, ...]
    written: tuple[torch.Tensor, ...]
    kernels_inside: bool


@dataclass
class CapturedWork:
    """The steps of one captured graph, in the order they were captured."""

    steps: list[CapturedLaunch | CapturedOperator] = field(default_factory=list)

    @property
    def launched(self) -> bool:
        """Whether the graph holds launches of the candidate's own kernels."""
        return any(isinstance(step, CapturedLaunch) for step in self.steps)


def captured_work(graph: Any) -> CapturedWork:
    """The steps recorded for ``graph`` so far (a new, empty record at its first step)."""
    work = getattr(graph, "drkernel_work", None)
    if not isinstance(work, CapturedWork):
        work = CapturedWork()
        graph.drkernel_work = work
    return work
