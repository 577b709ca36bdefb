"""Compiles the candidate's interpreted kernels for a GPU target, without a GPU.

On CPU the interpreter runs kernels leniently; the compiler is stricter. Each distinct launch
the interpreter saw is compiled for an H100 (sm_90), so that a kernel that would not compile
on a GPU is a compile error on CPU too.

The kernels are compiled from the very functions that ran, never from a second import of the
candidate: importing again would run its module-level code again (a ``torch.library`` op
registered anew against compiled kernels, for one), and would miss kernels that are not
module attributes (defined in a function or a closure). Each launched function is rebuilt with
the same code over *shadow* globals and closure cells in which every interpreted @triton.jit
function it can reach is a compilable twin, so that the candidate's own namespace never changes.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterable, Iterator
from typing import Any

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

from services.sandbox.candidate import libdevice_numpy
from services.sandbox.candidate.launches import CompileRequest
from services.sandbox.candidate.libdevice_numpy import CUDA_MODULE, STUB_MODULE
from services.sandbox.wire.judge_candidate import KernelCompile

TARGET = GPUTarget("cuda", 90, 32)


class LanguageSnapshot:
    """``triton.language`` as it was before any interpreted launch, restorable for compiling.

    Three things stand in the compiler's way in a process that runs the interpreter. The
    interpreter swaps the language's builtins for NumPy versions while a kernel runs, and a
    call from one kernel into another @triton.jit function never swaps them back (Triton
    3.9). The library's own @triton.jit functions (tl.sum, tl.max, tl.cumsum, ...) were
    built as interpreter functions. And the sandbox gives libdevice NumPy equivalents on CPU
    (libdevice_numpy.py). ``compiling()`` restores the builtins and libdevice and stands
    compilable twins in for the library functions, then puts the interpreter's back.
    """

    def __init__(self) -> None:
        import importlib

        import triton.language as tl

        libdevice = [importlib.import_module(name) for name in (CUDA_MODULE, STUB_MODULE)]
        self._owners: list[Any] = [
            tl,
            tl.core,
            tl.math,
            tl.standard,
            tl.core.tensor,
            tl.core.dtype,
            tl.core.condition,
            *libdevice,
        ]
        replaced = libdevice_numpy.originals()
        self._saved = [{**vars(owner), **replaced.get(owner.__name__, {})} for owner in self._owners]

    def _apply(self, states: list[dict[str, Any]]) -> None:
        for owner, state in zip(self._owners, states, strict=False):
            current = vars(owner)
            for name in [n for n in current if n not in state]:
                delattr(owner, name)
            for name, value in state.items():
                if current.get(name, _ABSENT) is not value:
                    setattr(owner, name, value)

    def originals(self) -> dict[int, Any]:
        """What each value swapped into the language since the snapshot replaced, by id: a
        candidate that imported a swapped function by name holds the replacement."""
        return {
            id(current[name]): value
            for owner, saved in zip(self._owners, self._saved, strict=False)
            for name, value in saved.items()
            if (current := vars(owner)).get(name, value) is not value
        }

    @contextlib.contextmanager
    def compiling(self) -> Iterator[None]:
        from triton.runtime.interpreter import InterpretedFunction

        interpreting = [dict(vars(owner)) for owner in self._owners]
        self._apply(self._saved)
        for owner in self._owners[:4]:
            for name, value in list(vars(owner).items()):
                if isinstance(value, InterpretedFunction):
                    setattr(owner, name, JITFunction(value.fn))
        try:
            yield
        finally:
            self._apply(interpreting)


_ABSENT = object()


class _Twins:
    """Compilable twins of interpreted functions, sharing one shadow copy per globals dict."""

    def __init__(self, originals: dict[int, Any]) -> None:
        self._originals = originals
        self._twins: dict[Any, JITFunction] = {}
        self._shadows: dict[int, dict[str, Any]] = {}

    def kernel(self, fn: types.FunctionType, options: dict[str, Any] | None = None) -> JITFunction:
        """A JITFunction with ``fn``'s code whose globals and closure see only compilable twins."""
        if fn in self._twins:
            return self._twins[fn]
        cells = tuple(types.CellType() for _ in fn.__closure__ or ())
        twin = types.FunctionType(
            fn.__code__, self._shadow(fn.__globals__), fn.__name__, fn.__defaults__, cells or None
        )
        twin.__kwdefaults__ = fn.__kwdefaults__
        twin.__qualname__ = fn.__qualname__
        twin.__module__ = fn.__module__
        twin.__annotations__ = fn.__annotations__
        jit = self._twins[fn] = JITFunction(twin, **(options or {}))
        for cell, original in zip(cells, fn.__closure__ or (), strict=False):
            with contextlib.suppress(ValueError):  # a cell not yet filled stays empty
                cell.cell_contents = self._value(original.cell_contents)
        return jit

    def _shadow(self, namespace: dict[str, Any]) -> dict[str, Any]:
        shadow = self._shadows.get(id(namespace))
        if shadow is None:
            shadow = self._shadows[id(namespace)] = dict(namespace)
            for name, value in namespace.items():
                shadow[name] = self._value(value)
        return shadow

    def _value(self, value: Any) -> Any:
        from triton.runtime.interpreter import InterpretedFunction

        if isinstance(value, InterpretedFunction):
            return self.kernel(value.fn, value.kwargs)
        return self._originals.get(id(value), value)


def compile_requests(requests: Iterable[CompileRequest], language: LanguageSnapshot) -> list[KernelCompile]:
    """Compiles each request for sm_90; ``message`` says what was compiled, or why it failed."""
    twins = _Twins(language.originals())  # before compiling() puts the originals back
    with language.compiling():
        return [_compile(twins, request) for request in requests]


def _compile(twins: _Twins, request: CompileRequest) -> KernelCompile:
    what = request.describe()
    try:
        kernel = twins.kernel(request.fn)
        triton.compile(ASTSource(kernel, request.signature, request.constexprs), target=TARGET, options=request.options)
    except Exception as error:  # noqa: BLE001 - every compiler failure is the candidate's
        return KernelCompile(name=request.name, ok=False, message=f"compiling {what}: {error}"[:8000])
    return KernelCompile(name=request.name, ok=True, message=f"compiled {what} for sm_90"[:8000])
