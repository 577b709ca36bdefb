"""Compiles the candidate's interpreted kernels for a GPU target, without a GPU.

On CPU the interpreter runs kernels leniently; the compiler is stricter. Each distinct launch
the interpreter saw is compiled for an H100 (sm_90) from a second import of the candidate
module made with the interpreter switched off, so that a kernel that would not compile on a
GPU is a compile error on CPU too.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

from services.sandbox.launches import CompileRequest
from services.sandbox.protocol import KernelCompile

TARGET = GPUTarget("cuda", 90, 32)
_MODULE_NAME = "candidate_for_compile"


class LanguageSnapshot:
    """``triton.language`` as it was before any interpreted launch, restorable for compiling.

    Two things stand in the compiler's way in a process that runs the interpreter. The
    interpreter swaps the language's builtins for NumPy versions while a kernel runs, and a
    call from one kernel into another @triton.jit function never swaps them back (Triton
    3.9). And the library's own @triton.jit functions (tl.sum, tl.max, tl.cumsum, ...) were
    built as interpreter functions. ``compiling()`` restores the builtins and stands
    compilable twins in for the library functions, then puts the interpreter's back.
    """

    def __init__(self) -> None:
        import triton.language as tl

        self._owners: list[Any] = [tl, tl.core, tl.math, tl.standard, tl.core.tensor, tl.core.dtype, tl.core.condition]
        self._saved = [dict(vars(owner)) for owner in self._owners]

    def _apply(self, states: list[dict[str, Any]]) -> None:
        for owner, state in zip(self._owners, states):
            current = vars(owner)
            for name in [n for n in current if n not in state]:
                delattr(owner, name)
            for name, value in state.items():
                if current.get(name, _ABSENT) is not value:
                    setattr(owner, name, value)

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


def _compile_module(path: Path) -> Any:
    if _MODULE_NAME in sys.modules:
        return sys.modules[_MODULE_NAME]
    previous = triton.knobs.runtime.interpret
    triton.knobs.runtime.interpret = False
    try:
        spec = importlib.util.spec_from_file_location(_MODULE_NAME, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_MODULE_NAME] = module
        spec.loader.exec_module(module)
    finally:
        triton.knobs.runtime.interpret = previous
    return module


def _jit_function(module: Any, name: str) -> JITFunction | None:
    value = getattr(module, name, None)
    while value is not None and not isinstance(value, JITFunction):
        value = getattr(value, "fn", None)
    return value


def compile_requests(path: Path, requests: Iterable[CompileRequest], language: LanguageSnapshot) -> list[KernelCompile]:
    """Compiles each request for sm_90; a kernel not found at module level is reported as
    unchecked, not failed."""
    with language.compiling():
        return _compile_all(path, requests)


def _compile_all(path: Path, requests: Iterable[CompileRequest]) -> list[KernelCompile]:
    try:
        module = _compile_module(path)
    except Exception as error:  # noqa: BLE001 - e.g. a module that launches kernels at import
        note = f"not compiled ahead: importing the module without the interpreter failed ({type(error).__name__})"
        return [KernelCompile(name=request.name, ok=True, message=note) for request in requests]
    outcomes = []
    for request in requests:
        fn = _jit_function(module, request.name)
        if fn is None:
            outcomes.append(KernelCompile(name=request.name, ok=True, message="not at module level; not compiled ahead"))
            continue
        try:
            triton.compile(ASTSource(fn, request.signature, request.constexprs), target=TARGET, options=request.options)
        except Exception as error:  # noqa: BLE001 - every compiler failure is the candidate's
            outcomes.append(KernelCompile(name=request.name, ok=False, message=str(error)[:8000]))
        else:
            outcomes.append(KernelCompile(name=request.name, ok=True))
    return outcomes
