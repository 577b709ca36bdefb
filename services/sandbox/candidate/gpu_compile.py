"""Compiles the candidate's interpreted kernels for a GPU target, without a GPU.

On CPU the interpreter runs kernels leniently; the compiler is stricter. Each distinct launch
the interpreter saw, of any kernel wherever it was defined (module level, a function, a
closure, a class, a factory, a string), is compiled for an H100 (sm_90), so that a kernel that
would not compile on a GPU is a compile error on CPU too.

The kernels are compiled from the very functions that ran and from the very source text the
interpreter rewrote them from (kernel_code.py), never from a second import of the candidate
nor from the source file as it is by then: importing again would run its module-level code
again (a ``torch.library`` op registered anew against compiled kernels, for one), and a file
or ``linecache`` entry changed after the launch would compile other code than ran. Each
launched function is rebuilt with the same code over *shadow* globals and closure cells in
which every interpreted @triton.jit function it can reach is a compilable twin, so that the
candidate's own namespace never changes. While a kernel compiles, compile_watch.py refuses
Python the kernel reaches outside Triton (it would run at every launch under the interpreter).
"""

from __future__ import annotations

import contextlib
import itertools
import linecache
import types
from collections.abc import Iterable, Iterator
from typing import Any

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

from services.sandbox.candidate import libdevice_numpy
from services.sandbox.candidate.compile_watch import CompileWatch
from services.sandbox.candidate.kernel_code import KernelCode
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


_PSEUDO_FILES = itertools.count()


def _as_ran(fn: types.FunctionType, source: str, def_line: int) -> types.CodeType:
    """``fn``'s code object, pointed at a private ``linecache`` entry holding exactly ``source``
    with its ``def`` at ``def_line``, so that Triton reads the text the interpreter ran."""
    name = f"<drkernel: source of {fn.__name__} as run, {next(_PSEUDO_FILES)}>"
    def_line = max(def_line, 1)
    lines = ["\n"] * (def_line - 1) + source.splitlines(keepends=True)
    linecache.cache[name] = (sum(len(line) for line in lines), None, lines, name)
    return fn.__code__.replace(co_filename=name, co_firstlineno=def_line)


class _Twins:
    """Compilable twins of interpreted functions, sharing one shadow copy per globals dict."""

    def __init__(self, originals: dict[int, Any], code: KernelCode) -> None:
        self._originals = originals
        self._code = code
        self._twins: dict[Any, JITFunction] = {}
        self._shadows: dict[int, dict[str, Any]] = {}

    def kernel(
        self, fn: types.FunctionType, options: dict[str, Any] | None = None, ran: tuple[str, int] | None = None
    ) -> JITFunction:
        """A JITFunction with ``fn``'s code, compiled from the source text the interpreter ran
        (``ran``, or the one it recorded for ``fn``), whose globals and closure see only
        compilable twins."""
        if fn in self._twins:
            return self._twins[fn]
        ran = ran or self._code.source_of(fn)
        cells = tuple(types.CellType() for _ in fn.__closure__ or ())
        twin = types.FunctionType(
            _as_ran(fn, *ran) if ran else fn.__code__,
            self._shadow(fn.__globals__),
            fn.__name__,
            fn.__defaults__,
            cells or None,
        )
        twin.__kwdefaults__ = fn.__kwdefaults__
        twin.__qualname__ = fn.__qualname__
        twin.__module__ = fn.__module__
        twin.__annotations__ = fn.__annotations__
        jit = self._twins[fn] = JITFunction(twin, **(options or {}))
        for cell, original in zip(cells, fn.__closure__ or (), strict=False):
            with contextlib.suppress(ValueError):  # a cell not yet filled stays empty
                cell.cell_contents = self.value(original.cell_contents)
        return jit

    def _shadow(self, namespace: dict[str, Any]) -> dict[str, Any]:
        shadow = self._shadows.get(id(namespace))
        if shadow is None:
            shadow = self._shadows[id(namespace)] = dict(namespace)
            for name, value in namespace.items():
                shadow[name] = self.value(value)
        return shadow

    def value(self, value: Any) -> Any:
        """``value`` as compiled code must see it: an interpreted function as its twin."""
        from triton.runtime.interpreter import InterpretedFunction

        if isinstance(value, InterpretedFunction):
            return self.kernel(value.fn, value.kwargs)
        return self._originals.get(id(value), value)


def compile_requests(
    requests: Iterable[CompileRequest], language: LanguageSnapshot, code: KernelCode
) -> list[KernelCompile]:
    """Compiles each request for sm_90; ``message`` says what was compiled, or why it failed."""
    twins = _Twins(language.originals(), code)  # before compiling() puts the originals back
    watch = CompileWatch()
    with language.compiling():
        compiled = [_compile(twins, watch, request) for request in requests]
    replaced = code.replaced()
    return compiled + [
        KernelCompile(name=name, ok=False, message=f"kernel `{name}` ran code swapped in after Triton rewrote it")
        for name in replaced
    ]


def _compile(twins: _Twins, watch: CompileWatch, request: CompileRequest) -> KernelCompile:
    what = request.describe()
    if request.problem:
        return KernelCompile(name=request.name, ok=False, message=f"kernel `{request.name}` {request.problem}")
    ran = (request.source, request.def_line) if request.source is not None else None
    try:
        kernel = twins.kernel(request.fn, ran=ran)
        constexprs = {path: twins.value(value) for path, value in request.constexprs.items()}
        with watch.watching():
            triton.compile(ASTSource(kernel, request.signature, constexprs), target=TARGET, options=request.options)
    except Exception as error:  # noqa: BLE001 - every compiler failure is the candidate's
        return KernelCompile(name=request.name, ok=False, message=f"compiling {what}: {error}"[:8000])
    problem = watch.problem(request.name)
    if problem:
        return KernelCompile(name=request.name, ok=False, message=f"compiling {what}: {problem}"[:8000])
    return KernelCompile(name=request.name, ok=True, message=f"compiled {what} for sm_90"[:8000])
