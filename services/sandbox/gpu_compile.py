"""Compiles the candidate's interpreted kernels for a GPU target, without a GPU.

On CPU the interpreter runs kernels leniently; the compiler is stricter. Each distinct launch
the interpreter saw is compiled for an H100 (sm_90) from a second import of the candidate
module made with the interpreter switched off, so that a kernel that would not compile on a
GPU is a compile error on CPU too.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable
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


def compile_requests(path: Path, requests: Iterable[CompileRequest]) -> list[KernelCompile]:
    """Compiles each request for sm_90; a kernel not found at module level is reported as
    unchecked, not failed."""
    module = _compile_module(path)
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
