"""Watching kernels run by Triton's CPU interpreter: bounds checks and traffic counts.

On a GPU an out-of-bounds access is an illegal-address fault or silent corruption; in the
interpreter it is a raw pointer into the process's heap, which crashes the process or
corrupts it. Every load and store (and atomic) of an interpreted launch is therefore checked
against the memory of the tensors passed to that launch: an access outside all of them
raises a readable error instead, so that a kernel that only fits the task's own shape is
reported as what it is.

The same hooks count each kernel's useful work, from which CPU profiles model device time
(services/profiler). Only work that could matter is charged, so that a kernel cannot buy
coverage with waste:

- **Bytes**: per launch, the distinct bytes its active lanes read and the distinct bytes they
  wrote (the compulsory traffic of an ideal cache). Loading an input 64 times costs what loading
  it once does.
- **FLOPs**: its dot products' FLOPs, capped per launch at ``DOT_REUSE * sqrt(S) * L`` for S
  distinct elements stored and L distinct elements loaded. A matrix product is exactly at
  ``sqrt(S) * L`` (M*N outputs from K*(M+N) inputs, 2*M*N*K FLOPs, equality when M = N); the
  factor leaves room for convolutions and attention, which reuse their inputs more. Dots of
  registers that never came from memory, or the same tiles multiplied again and again, are
  capped by what the launch read and wrote.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import torch
from triton.runtime.jit import TensorWrapper
from triton.tools.tensor_descriptor import TensorDescriptor

_active = threading.local()
# See the module docstring: how far a launch's dot-product FLOPs may exceed a matrix product's
# over the elements it read and wrote.
DOT_REUSE = 4.0


class OutOfBoundsAccess(IndexError):
    """A kernel touched memory outside every tensor it was given."""


def arguments_in(value: Any, name: str) -> Iterator[tuple[str, Any]]:
    """What a kernel argument hands the kernel, each with a readable name: the argument itself,
    the items of a (nested) tuple, the base of a tensor descriptor or of a ``triton.reinterpret``
    wrapper. Only Triton's own descriptor and wrapper are opened: a subclass runs its own code
    where Triton reads its base, so it is handed over as it is."""
    if isinstance(value, tuple):
        for index, item in enumerate(value):
            yield from arguments_in(item, f"{name}[{index}]")
    elif type(value) in (TensorDescriptor, TensorWrapper):
        yield from arguments_in(value.base, f"{name}.base")
    else:
        yield name, value


def tensors_in(value: Any, name: str) -> Iterator[tuple[str, torch.Tensor]]:
    """The tensors a kernel argument gives the kernel access to (``arguments_in``), each with a
    readable name."""
    return ((label, item) for label, item in arguments_in(value, name) if isinstance(item, torch.Tensor))


def _ranges(args: Iterable[tuple[str, Any]]) -> list[tuple[str, int, int]]:
    ranges = []
    for name, value in args:
        for label, tensor in tensors_in(value, name):
            storage = tensor.untyped_storage()
            ranges.append((label, storage.data_ptr(), storage.data_ptr() + storage.nbytes()))
    return ranges


class LaunchWork:
    """One interpreted launch: the tensors it may touch and what it did with them so far."""

    def __init__(self, kernel: str, ranges: list[tuple[str, int, int]]) -> None:
        self.kernel = kernel
        self.ranges = ranges
        self.stored_bytes = 0  # every byte stored, repeats included: zero means no work
        self.distinct_bytes = 0
        self.distinct_elements = {"load": 0, "store": 0}
        self.dot_flops = 0
        # per tensor range and direction, which bytes were touched (the start of each element)
        self._touched: dict[tuple[int, bool], np.ndarray] = {}

    def touch(self, index: int, offsets: np.ndarray, itemsize: int, load: bool) -> None:
        """Counts the elements at ``offsets`` of range ``index`` not touched before this way."""
        _, low, high = self.ranges[index]
        touched = self._touched.get((index, load))
        if touched is None:
            touched = self._touched[(index, load)] = np.zeros(high - low, dtype=bool)
        fresh = offsets[~touched[offsets]]
        if fresh.size == 0:
            return
        if not (fresh[1:] > fresh[:-1]).all():  # lanes usually address increasing elements: all distinct
            fresh = np.unique(fresh)
        touched[fresh] = True
        self.distinct_bytes += int(fresh.size) * itemsize
        self.distinct_elements["load" if load else "store"] += int(fresh.size)

    def useful_flops(self) -> int:
        reads, writes = self.distinct_elements["load"], self.distinct_elements["store"]
        return int(min(self.dot_flops, DOT_REUSE * np.sqrt(writes) * reads))


def _check(kind: str, ptrs: Any, mask: Any) -> None:
    launch: LaunchWork | None = getattr(_active, "launch", None)
    if launch is None:
        return
    addresses = np.asarray(ptrs.data, dtype=np.uint64)
    active = addresses if mask is None else addresses[np.asarray(mask.data, dtype=bool)]
    if active.size == 0:
        return
    itemsize = np.dtype(_element_np_dtype(ptrs)).itemsize
    if kind != "load":
        launch.stored_bytes += int(active.size) * itemsize
    inside = np.zeros(active.shape, dtype=bool)
    for index, (_, low, high) in enumerate(launch.ranges):
        here = (active >= low) & (active + itemsize <= high) & ~inside  # a byte counts in one range only
        if here.any():
            launch.touch(index, (active[here] - low).astype(np.int64), itemsize, kind == "load")
            if kind == "atomic":  # a read-modify-write reads too
                launch.touch(index, (active[here] - low).astype(np.int64), itemsize, True)
        inside |= here
    if inside.all():
        return
    ranges = launch.ranges
    kernel = launch.kernel
    outside = active[~inside]
    first = int(outside[0])
    nearest = min(ranges, key=lambda r: min(abs(first - r[1]), abs(first - r[2])), default=None)
    where = ""
    if nearest is not None:
        name, low, high = nearest
        if first >= high:
            where = (
                f"; the first is {first - high} bytes past the end of `{name}`"
                if first > high
                else f"; the first is just past the end of `{name}`"
            )
        else:
            where = f"; the first is {low - first} bytes before the start of `{name}`"
    raise OutOfBoundsAccess(
        f"out-of-bounds {kind} in kernel `{kernel}`: {outside.size} of {active.size} active lanes "
        f"address memory outside every tensor argument{where} (a missing or wrong mask?)"
    )


def _element_np_dtype(ptrs: Any) -> Any:
    from triton.runtime.interpreter import _get_np_dtype

    return _get_np_dtype(ptrs.get_element_ty())


class InterpreterMonitor:
    """Installs the checks and counters on the interpreter's operations."""

    def __init__(self) -> None:
        self.patched: dict[str, Callable[..., Any]] = {}
        self._traffic: dict[str, list[int]] = {}
        # The interpreter keeps per-launch state in globals: two threads launching at once
        # would corrupt each other, so launches take turns.
        self._one_launch_at_a_time = threading.Lock()
        self._watched: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext

    def watch_launches(self, launch: Callable[[], contextlib.AbstractContextManager[Any]]) -> None:
        """Runs every launch inside ``launch()`` (integrity.InterpreterWatch.launch, which
        compares what the interpreter computes with right before and after it)."""
        self._watched = launch

    def begin(self, kernel: str, named_args: Iterable[tuple[str, Any]]) -> None:
        """Declares the tensors of the launch about to run on this thread."""
        _active.launch = LaunchWork(kernel, _ranges(named_args))

    def end(self) -> None:
        """Charges the launch that ran on this thread with its useful work."""
        launch: LaunchWork | None = getattr(_active, "launch", None)
        _active.launch = None
        _active.stored_bytes = launch.stored_bytes if launch is not None else 0
        if launch is None:
            return
        traffic = self._traffic.setdefault(launch.kernel, [0, 0, 0])  # launches, bytes, flops
        traffic[0] += 1
        traffic[1] += launch.distinct_bytes
        traffic[2] += launch.useful_flops()

    @staticmethod
    def last_stored_bytes() -> int:
        """Bytes the last interpreted launch on this thread stored (atomics included)."""
        return getattr(_active, "stored_bytes", 0)

    def take_traffic(self) -> dict[str, tuple[int, int, int]]:
        """Launches, useful bytes moved and useful dot-product FLOPs per kernel since the last
        call (the module docstring says what is useful)."""
        traffic, self._traffic = self._traffic, {}
        return {name: (launches, moved, flops) for name, (launches, moved, flops) in traffic.items()}

    def install(self) -> None:
        """Patches the interpreter; install before the launch recorder wraps the same entry."""
        from triton.runtime import interpreter

        original_call = interpreter.GridExecutor.__call__
        checker = self

        def grid_call(executor: Any, *args: Any, **kwargs: Any) -> Any:
            with checker._one_launch_at_a_time, checker._watched():
                checker.begin(executor.fn.__name__, [*zip(executor.arg_names, args, strict=False), *kwargs.items()])
                try:
                    return original_call(executor, *args, **kwargs)
                finally:
                    checker.end()

        interpreter.GridExecutor.__call__ = grid_call  # type: ignore[method-assign]
        builder = interpreter.interpreter_builder
        load, store = builder.create_masked_load, builder.create_masked_store
        cas, rmw = builder.create_atomic_cas, builder.create_atomic_rmw
        dot = builder.create_dot

        # The arguments after the ones checked differ across Triton versions (3.6 passes the
        # cache modifier and eviction policy apart, 3.9 one cache policy): passed on as given.
        def checked_load(ptrs: Any, mask: Any, *rest: Any, **options: Any) -> Any:
            _check("load", ptrs, mask)
            return load(ptrs, mask, *rest, **options)

        def checked_store(ptrs: Any, value: Any, mask: Any, *rest: Any, **options: Any) -> Any:
            _check("store", ptrs, mask)
            return store(ptrs, value, mask, *rest, **options)

        def checked_cas(ptr: Any, *rest: Any, **options: Any) -> Any:
            _check("atomic", ptr, None)
            return cas(ptr, *rest, **options)

        def checked_rmw(op: Any, ptr: Any, val: Any, mask: Any, *rest: Any, **options: Any) -> Any:
            _check("atomic", ptr, mask)
            return rmw(op, ptr, val, mask, *rest, **options)

        def counted_dot(a: Any, b: Any, *rest: Any, **options: Any) -> Any:
            launch: LaunchWork | None = getattr(_active, "launch", None)
            if launch is not None:
                *batch, m, k = a.data.shape
                launch.dot_flops += 2 * int(np.prod(batch, dtype=np.int64)) * m * k * b.data.shape[-1]
            return dot(a, b, *rest, **options)

        builder.create_masked_load = checked_load
        builder.create_masked_store = checked_store
        builder.create_atomic_cas = checked_cas
        builder.create_atomic_rmw = checked_rmw
        builder.create_dot = counted_dot
        self.patched = {
            "interpreter_builder.create_masked_load": checked_load,
            "interpreter_builder.create_masked_store": checked_store,
            "interpreter_builder.create_atomic_cas": checked_cas,
            "interpreter_builder.create_atomic_rmw": checked_rmw,
            "interpreter_builder.create_dot": counted_dot,
        }

    def current_patches(self) -> dict[str, Any]:
        """The objects now in the patched places, and the watch every launch runs in."""
        from triton.runtime import interpreter

        builder = interpreter.interpreter_builder
        return {
            **{name: getattr(builder, name.split(".", 1)[1]) for name in self.patched},
            "InterpreterMonitor.watch_launches": self._watched,
        }
