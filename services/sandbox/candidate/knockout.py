"""Destroying what the candidate's own kernels write, to see whether its outputs need it.

A kernel can run over the whole input and store every element, yet write into a buffer that
is thrown away while PyTorch computes the returned output (the lazy optimisation that launch
checks alone cannot see). During one knocked-out forward call, every tensor that a launch of
the candidate's own kernels changed is overwritten right after the launch (floats with NaN,
integers with their largest value, booleans inverted). If the outputs are still right, the
kernels' results never reached them.

Only the Python launch entry points are wrapped (``JITFunction.run`` for compiled kernels,
``InterpretedFunction.run`` under the CPU interpreter), and only for that one call, so that
timed calls run unwrapped. The knock-out is evidence only when something was overwritten:
``overwritten`` counts it, and zero means the check says nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from services.sandbox.shared.tensor_bits import Snapshot


def _overwrite(tensor: torch.Tensor) -> None:
    if tensor.is_floating_point() or tensor.is_complex():
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        tensor.logical_not_()
    else:
        tensor.fill_(torch.iinfo(tensor.dtype).max)


class KnockOut:
    """Wraps the launch entry points while active; counts the tensors it overwrote."""

    def __init__(self, own_file: str) -> None:
        self.own_file = own_file
        self.overwritten = 0
        self._lock = threading.Lock()

    def _entry_points(self) -> list[tuple[type, str]]:
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        return [(JITFunction, "run"), (InterpretedFunction, "run")]

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        knock_out = self

        def run(kernel: Any, *args: Any, **kwargs: Any) -> Any:
            own = getattr(getattr(kernel.fn, "__code__", None), "co_filename", None) == knock_out.own_file
            if not own or kwargs.get("warmup"):
                return original(kernel, *args, **kwargs)
            tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)]
            before = [Snapshot(t) for t in tensors]
            result = original(kernel, *args, **kwargs)
            for tensor, snapshot in zip(tensors, before, strict=False):
                if not snapshot.unchanged(tensor):  # waits for the launch
                    with torch.no_grad():
                        _overwrite(tensor.detach())
                    with knock_out._lock:
                        knock_out.overwritten += 1
            return result

        return run

    @contextmanager
    def active(self) -> Iterator[None]:
        """Knocks out every launch of the candidate's own kernels inside the block."""
        self.overwritten = 0
        saved = [(owner, name, getattr(owner, name)) for owner, name in self._entry_points()]
        for owner, name, original in saved:
            setattr(owner, name, self._wrap(original))
        try:
            yield
        finally:
            for owner, name, original in saved:
                setattr(owner, name, original)
