"""Records every Triton kernel launch in the candidate's process.

Two paths cover every way a kernel can run. Compiled kernels (GPU) all go through
``CompiledKernel.launch_metadata`` right before the driver launch, whether they were started
by ``kernel[grid](...)``, an autotuner, heuristics or a CompiledKernel called directly. The
interpreter (CPU) runs each launch through ``GridExecutor``, which announces the grid to
``interpreter_builder.set_grid_dim``. A kernel is the candidate's own when its Python function
was defined in the candidate's file; a launch of zero programs runs nothing and is kept with
``programs=0`` so that it never counts as work.
"""

from __future__ import annotations

import inspect
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from services.profiler.collect import TRITON_RANGE_PREFIX
from services.sandbox.protocol import LaunchRecord

_TORCH_TO_TRITON = {
    torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64",
    torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64",
    torch.uint8: "u8", torch.bool: "i1",
}


@dataclass(frozen=True)
class CompileRequest:
    """What is needed to compile one interpreted launch ahead of time for a GPU target."""

    name: str
    signature: dict[str, str]
    constexprs: dict[str, Any] = field(hash=False)
    options: dict[str, int] = field(hash=False)


def _triton_type(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return "*" + _TORCH_TO_TRITON.get(value.dtype, "fp32")
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    return "constexpr"


def compile_request(fn: Callable[..., Any], constexpr_names: Sequence[str], args: tuple, kwargs: dict) -> CompileRequest:
    """The signature Triton would compile this call with (without its specialisations)."""
    parameters = inspect.signature(fn).parameters
    bound = {name: p.default for name, p in parameters.items() if p.default is not inspect.Parameter.empty}
    bound.update(zip(parameters, args))
    bound.update({k: v for k, v in kwargs.items() if k in parameters})
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for name in parameters:
        value = bound.get(name)
        kind = "constexpr" if name in constexpr_names or value is None else _triton_type(value)
        signature[name] = kind
        if kind == "constexpr":
            constexprs[name] = value
    options = {k: int(kwargs[k]) for k in ("num_warps", "num_stages") if k in kwargs}
    return CompileRequest(fn.__name__, signature, constexprs, options)


class LaunchRecorder:
    """Patches Triton's launch paths; ``take()`` returns and clears what ran since.

    ``stored_bytes`` tells, for interpreted launches, how many bytes a launch wrote (from the
    interpreter monitor): a launch that writes nothing did no work. Compiled launches cannot
    say, and report None.
    """

    def __init__(self, own_file: str, stored_bytes: Callable[[], int]) -> None:
        self.own_file = own_file
        self._stored_bytes = stored_bytes
        self._lock = threading.Lock()
        self._launches: list[tuple[str, bool, int, int | None]] = []
        self._compile_requests: dict[tuple[str, str], CompileRequest] = {}
        self._current = threading.local()
        self.patched: dict[str, Callable[..., Any]] = {}

    def _record(self, name: str, filename: str | None, grid: Sequence[int], stored: int | None) -> None:
        # On the timed path: keep it to a tuple append.
        programs = math.prod(grid) if grid else 0
        with self._lock:
            self._launches.append((name, filename == self.own_file, programs, stored))

    def take(self) -> list[LaunchRecord]:
        with self._lock:
            launches, self._launches = self._launches, []
        return [
            LaunchRecord(name=n, own=own, programs=max(int(p), 0), stored_bytes=stored)
            for n, own, p, stored in launches
        ]

    def compile_requests(self) -> list[CompileRequest]:
        """The distinct interpreted launches of the candidate's own kernels seen so far."""
        with self._lock:
            return list(self._compile_requests.values())

    def install(self) -> None:
        """Wraps both launch paths; call once, before any candidate code runs."""
        from triton.compiler.compiler import CompiledKernel
        from triton.runtime import interpreter

        original_metadata = CompiledKernel.launch_metadata
        recorder = self

        def launch_metadata(kernel: Any, grid: Sequence[int], stream: Any, *args: Any) -> Any:
            fn = getattr(getattr(kernel.src, "fn", None), "fn", None)
            filename = getattr(getattr(fn, "__code__", None), "co_filename", None)
            recorder._record(kernel.name, filename, tuple(grid), None)
            return original_metadata(kernel, grid, stream, *args)

        original_call = interpreter.GridExecutor.__call__

        def grid_call(executor: Any, *args: Any, **kwargs: Any) -> Any:
            recorder._current.executor = (executor, args, kwargs)
            recorder._current.grid = None
            try:
                # A named range, so that profiles on CPU can attribute time to this kernel.
                with torch.profiler.record_function(TRITON_RANGE_PREFIX + executor.fn.__name__):
                    result = original_call(executor, *args, **kwargs)
            finally:
                recorder._current.executor = None
            # Recorded only once it ran to the end: a launch that raised did no work.
            fn = executor.fn
            recorder._record(fn.__name__, fn.__code__.co_filename, recorder._current.grid or (), recorder._stored_bytes())
            return result

        builder = interpreter.interpreter_builder
        original_set_grid = builder.set_grid_dim

        def set_grid_dim(nx: int, ny: int, nz: int) -> Any:
            current = getattr(recorder._current, "executor", None)
            if current is not None:
                executor, args, kwargs = current
                recorder._current.grid = (nx, ny, nz)
                if executor.fn.__code__.co_filename == recorder.own_file:
                    request = compile_request(executor.fn, executor.constexprs, args, kwargs)
                    key = (request.name, repr(sorted(request.signature.items())) + repr(request.constexprs))
                    with recorder._lock:
                        recorder._compile_requests.setdefault(key, request)
            return original_set_grid(nx, ny, nz)

        CompiledKernel.launch_metadata = launch_metadata  # type: ignore[method-assign]
        interpreter.GridExecutor.__call__ = grid_call  # type: ignore[method-assign]
        builder.set_grid_dim = set_grid_dim  # type: ignore[method-assign]
        self.patched = {
            "CompiledKernel.launch_metadata": launch_metadata,
            "GridExecutor.__call__": grid_call,
            "interpreter_builder.set_grid_dim": set_grid_dim,
        }

    def current_patches(self) -> dict[str, Any]:
        """The objects now in the patched places, to detect a candidate undoing them."""
        from triton.compiler.compiler import CompiledKernel
        from triton.runtime import interpreter

        return {
            "CompiledKernel.launch_metadata": CompiledKernel.launch_metadata,
            "GridExecutor.__call__": interpreter.GridExecutor.__call__,
            "interpreter_builder.set_grid_dim": interpreter.interpreter_builder.set_grid_dim,
        }
