"""Proof of work: what each launch of the candidate's own kernels writes, and, in a knock-out
call, replacing it to see whether the outputs need it.

A launch proves nothing by running: a kernel may store nothing, store back what was there,
fill a buffer with one value, copy an argument, or write into a buffer that is thrown away
while PyTorch computes the returned output. During every checked call (never a timed one)
each launch of the candidate's own kernels is watched: its tensor arguments (tuples and
tensor descriptors included) are remembered before it and compared after it, element by
element, and the launch is recorded as having written ``data``, ``nothing``, a ``constant``
(every tensor it changed now holds one value) or a ``copy`` (every tensor it changed now
equals an argument it left unchanged) (LaunchRecord.wrote). Only ``data`` is work.

Knock-out calls are what prove that the outputs need that data. Nothing in the candidate's
process tells them apart from other checked calls before its first kernel has run: the
wrappers are installed once, before any candidate code, and stay; the Run command is the
same; right after the first launch of each of its own kernels in a call the harness asks the
judge (``order``) whether to replace what that kernel writes during this call. When told to,
every tensor a launch changed is replaced, whole (a kernel may store unchanged values, and
only changed ones can be seen), by different finite values of the same kind: floats move by
0.5 to 1.5 times the tensor's root mean square (at least MIN_SCALE, so that a move always
exceeds the judge's tolerance), all of one tensor's in one direction, drawn per tensor (so
that a sum of them moves too, as when PyTorch adds up a kernel's partial sums: moves of
random signs cancel there), integers move to another value within the tensor's range
(indices stay valid), booleans flip. The judge then counts how much of the output moved
(judge/work.py).

The probe's own tensor work runs through ``quiet`` (no dispatch mode, no profiler sees it)
and with tensor functions captured when this module was imported.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import torch
from torch.utils._python_dispatch import _disable_current_modes

from services.sandbox.candidate.bounds import tensors_in
from services.sandbox.shared.tensor_bits import Snapshot, bitwise_equal
from services.sandbox.wire.judge_candidate import Wrote

_TensorBase = torch._C.TensorBase
_detach = _TensorBase.detach
_view = _TensorBase.view
_reshape = _TensorBase.reshape
_to = _TensorBase.to
_copy = _TensorBase.copy_
_ne = torch.ne
_eq = torch.eq
_where = torch.where
_isfinite = torch.isfinite
_logical_not = torch.logical_not
_rand = torch.rand
_randint = torch.randint
_count = torch.count_nonzero
_all = torch.all
_sqrt = torch.sqrt
_amin = torch.amin
_amax = torch.amax
_remainder = torch.remainder
_float64 = torch.float64
_int64 = torch.int64

# Same-size integer views for comparing elements bit by bit.
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
# "constant" and "copy" are said of writes this large only: a few elements can coincide.
MIN_ELEMENTS = 64
# Replaced floats move by at least half this (absolute), so that a move is never within the
# judge's tolerances (atol 1e-2 to 2e-2) however small the values written.
MIN_SCALE = 0.25


def _changed(before: torch.Tensor, after: torch.Tensor) -> int | None:
    """How many elements' bits differ, or None when the dtype has no same-size integer view
    (the caller compares whole tensors)."""
    bits = _BITS.get(after.element_size())
    if bits is None:
        return None
    return int(_count(_ne(_view(before, bits), _view(after, bits))))


class _Argument:
    """A tensor argument of a launch as it was before the launch: an exact copy, or a keyed
    digest when a copy would crowd the device (then only "changed or not" is known)."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = _detach(tensor)
        self._snapshot = Snapshot(self.tensor)
        self._copy = self._snapshot.copy

    def changed(self) -> int:
        """How many elements changed (all of them, when only a digest tells)."""
        tensor = self.tensor
        if self._copy is not None:
            count = _changed(self._copy, tensor)
            if count is not None:
                return count
        return 0 if self._snapshot.unchanged(tensor) else tensor.numel()


def _is_constant(tensor: torch.Tensor, count: int) -> bool:
    """A float tensor (enough of it changed) that now holds one value throughout."""
    if count < MIN_ELEMENTS or not tensor.is_floating_point():
        return False
    values = _reshape(tensor, (-1,))
    return bool(_all(_eq(values, values[0])))  # by value: -0.0 is 0.0


def _is_copy(tensor: torch.Tensor, count: int, sources: list[torch.Tensor]) -> bool:
    """A tensor (enough of it changed) that now holds exactly another argument's bits."""
    return count >= MIN_ELEMENTS and any(
        source.shape == tensor.shape and source.dtype == tensor.dtype and bitwise_equal(source, tensor)
        for source in sources
    )


def replace(tensor: torch.Tensor, generator: torch.Generator) -> None:
    """Overwrites every element of ``tensor`` with another finite value of the same kind
    (module docstring)."""
    target = _detach(tensor)
    if target.is_complex():
        target = torch.view_as_real(target)
    if target.dtype == torch.bool:
        _copy(target, _logical_not(target))
        return
    values = _to(target, _float64)
    if target.is_floating_point():
        finite = _isfinite(values)
        written = _where(finite, values, torch.zeros_like(values))
        count = int(_count(finite))
        rms = float(_sqrt((written * written).sum() / count)) if count else 0.0
        scale = max(rms, MIN_SCALE)
        size = _rand(target.shape, generator=generator, device=target.device, dtype=_float64)
        sign = -1.0 if float(_rand((), generator=generator, device=target.device)) < 0.5 else 1.0
        _copy(target, _to(written + sign * scale * (0.5 + size), target.dtype))
        return
    low, high = int(_amin(values)), int(_amax(values))
    span = high - low + 1
    if span <= 1:
        return  # one value only: nothing else within the range written
    exact = _to(target, _int64)
    if span > 2**52:  # beyond float64's integers: flip the lowest bit instead
        _copy(target, _to(exact ^ 1, target.dtype))
        return
    step = _randint(1, span, target.shape, generator=generator, device=target.device, dtype=_int64)
    _copy(target, _to(_remainder(exact - low + step, span) + low, target.dtype))


class WorkProbe:
    """Wraps the launch entry points once; does its work only while ``armed``.

    ``recorder`` is the LaunchRecorder (the probe annotates the launches it saw); ``quiet``
    hides the probe's own tensor work from dispatch modes and the profiler; ``capturing``
    says which CUDA graph, if any, the current thread is capturing; ``sync`` waits for all
    the device's work (a kernel may run on another stream).
    """

    def __init__(
        self,
        own_file: str,
        recorder: Any,
        quiet: Callable[[], AbstractContextManager[None]],
        capturing: Callable[[], Any],
        sync: Callable[[], None] = lambda: None,
    ) -> None:
        self.own_file = own_file
        self._recorder = recorder
        self._quiet = quiet
        self._capturing = capturing
        self._sync = sync
        self._lock = threading.RLock()
        self._order: Callable[[str], bool] | None = None
        self._on_written: Callable[[list[tuple[torch.Tensor, int]]], None] = lambda _: None
        self._orders: dict[str, bool] = {}
        self._generator: dict[torch.device, torch.Generator] = {}
        self.knocked_out = 0  # tensors whose written elements were replaced in this call
        self.launches = 0  # own launches seen in this call (the trace watches it move)
        self.patched: dict[str, Callable[..., Any]] = {}

    def install(self) -> None:
        """Wraps ``JITFunction.run`` (compiled kernels, autotuners, heuristics) and
        ``InterpretedFunction.run`` (the CPU interpreter); call once, before candidate code."""
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        for owner in (JITFunction, InterpretedFunction):
            wrapper = self._wrap(owner.run)
            owner.run = wrapper  # type: ignore[method-assign]
            self.patched[f"{owner.__name__}.run"] = wrapper

    def current_patches(self) -> dict[str, Any]:
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        return {"JITFunction.run": JITFunction.run, "InterpretedFunction.run": InterpretedFunction.run}

    @contextmanager
    def armed(
        self, order: Callable[[str], bool], on_written: Callable[[list[tuple[torch.Tensor, int]]], None]
    ) -> Iterator[None]:
        """Watches every own launch inside the block; ``order(kernel)`` is asked once per
        kernel name, after its first launch, whether to knock out what it writes;
        ``on_written`` hears of every tensor an own launch changed, with how many of its
        elements changed."""
        with self._lock:
            self._order, self._on_written, self._orders = order, on_written, {}
            self.knocked_out = self.launches = 0
        try:
            yield
        finally:
            with self._lock:  # a launch still in progress on another thread finishes first
                self._order, self._on_written = None, lambda _: None

    def replayed(self, graph: Any) -> None:
        """A CUDA graph replayed: what its captured own launches could write is written. The
        replay also writes again whatever a knock-out replaced before it in this call (an honest
        candidate launches once eagerly, then captures and replays), so this call's outputs can
        no longer show whether they need the kernels' results: it knocked nothing out."""
        written = getattr(graph, "drkernel_written", ())
        if written and self._order is not None:
            self._on_written([(tensor, tensor.numel()) for tensor in written])
            self.knocked_out = 0

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        probe = self

        def run(kernel: Any, *args: Any, **kwargs: Any) -> Any:
            if probe._order is None or kwargs.get("warmup"):
                return original(kernel, *args, **kwargs)
            if getattr(getattr(kernel.fn, "__code__", None), "co_filename", None) != probe.own_file:
                return original(kernel, *args, **kwargs)
            return probe._launch(original, kernel, args, kwargs)

        return run

    def _tensors(self, args: tuple, kwargs: dict) -> list[torch.Tensor]:
        seen: dict[int, torch.Tensor] = {}
        for index, value in enumerate((*args, *kwargs.values())):
            for _, tensor in tensors_in(value, str(index)):
                if type(tensor) in (torch.Tensor, torch.nn.Parameter) and tensor.layout == torch.strided:
                    seen.setdefault(id(tensor), tensor)
        return list(seen.values())

    def _launch(self, original: Callable[..., Any], kernel: Any, args: tuple, kwargs: dict) -> Any:
        tensors = self._tensors(args, kwargs)
        graph = self._capturing()
        if graph is not None:  # nothing runs while capturing: remember what replays may write
            if not hasattr(graph, "drkernel_written"):
                graph.drkernel_written = []
            graph.drkernel_written.extend(tensors)
            return original(kernel, *args, **kwargs)
        with self._lock:
            with self._quiet():
                self._sync()
                before = [_Argument(t) for t in tensors]
            position = self._recorder.position()
            with _disable_current_modes():  # the interpreter's own tensor work is not the candidate's
                result = original(kernel, *args, **kwargs)
            name = getattr(kernel.fn, "__name__", "kernel")
            with self._quiet():
                self._sync()
                wrote, changed = self._classify(before)
                del before
            self._recorder.annotate(position, wrote)
            self.launches += 1
            if changed:
                self._on_written(changed)
            if name not in self._orders and self._order is not None:
                self._orders[name] = self._order(name)
            if changed and self._orders.get(name):
                with self._quiet():
                    for tensor, _ in changed:
                        replace(tensor, self._generator_for(tensor.device))
                self.knocked_out += len(changed)
        return result

    def _classify(self, before: list[_Argument]) -> tuple[Wrote, list[tuple[torch.Tensor, int]]]:
        """What a launch wrote, and the tensors it changed with how many elements each."""
        changed, unchanged = [], []
        for argument in before:
            count = argument.changed()
            if count:
                changed.append((argument.tensor, count))
            else:
                unchanged.append(argument.tensor)
        if not changed:
            return "nothing", changed
        if all(_is_copy(tensor, count, unchanged) for tensor, count in changed):
            return "copy", changed
        if all(_is_constant(tensor, count) for tensor, count in changed):
            return "constant", changed
        return "data", changed

    def _generator_for(self, device: torch.device) -> torch.Generator:
        if device not in self._generator:
            generator = torch.Generator(device=device)
            generator.manual_seed(secrets.randbits(63))
            self._generator[device] = generator
        return self._generator[device]
