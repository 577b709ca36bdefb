"""What a kernel may call while Triton compiles it, checked during the CPU judge's GPU compile.

Triton's code generator runs some Python while it compiles a kernel: the ``@triton.jit`` and
``@triton.constexpr_function`` functions it calls, Triton's builtins, and, through constexpr
values, any other callable or attribute a kernel reaches (a Python function wrapped in
``tl.constexpr``, a property of a constexpr object, ``torch.relu`` as a constexpr). On a GPU that
Python runs once, at compile time, and the kernel does none of it. Under the CPU interpreter the
same body runs it at every launch: a kernel could hand its work to PyTorch or NumPy and still
compile. So while a kernel compiles, two things are refused:

- a call the code generator makes to a callable that is not Triton's, a builtin of plain values
  (``len``, ``min``, ``math.log2``, a method of a str or tuple), a namedtuple or a Triton aggregate;
- any Python code of the candidate's own that runs (a frame outside Triton, the standard library
  and installed packages), except a ``@triton.constexpr_function``, which is what Triton offers for
  compile-time Python.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import sys
import sysconfig
import types
from collections.abc import Iterator
from typing import Any

_IMMUTABLE = (str, bytes, int, float, bool, complex, tuple, frozenset, range, slice, type(None))
_UNSAFE_BUILTINS = frozenset(
    {"exec", "eval", "compile", "__import__", "open", "setattr", "delattr", "globals", "locals", "vars", "breakpoint"}
)


def _jit_file() -> str:
    from triton.runtime import jit

    return jit.__file__


_JIT_FILE = _jit_file()


def _library_dirs() -> tuple[str, ...]:
    import triton

    import services

    paths = sysconfig.get_paths()
    dirs = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs |= {os.path.dirname(triton.__file__), os.path.dirname(services.__file__)}
    return tuple(os.path.join(d, "") for d in dirs)


def _from_triton(value: Any) -> bool:
    module = getattr(value, "__module__", None) or ""
    return module == "triton" or module.startswith("triton.")


def _callable_name(fn: Any) -> str:
    module = getattr(fn, "__module__", None) or getattr(type(fn), "__module__", "?")
    return f"`{getattr(fn, '__qualname__', None) or getattr(fn, '__name__', None) or type(fn).__name__}` ({module})"


def foreign(fn: Any, builtin_namespace: dict[str, Any]) -> bool:
    """Whether a kernel calling ``fn`` calls something other than Triton or plain values' builtins."""
    from triton._utils import is_namedtuple
    from triton.compiler.code_generator import BoundJITMethod
    from triton.language.core import base_type, base_value, is_builtin
    from triton.runtime.jit import BoundConstexprFunction, JITCallable

    if isinstance(fn, (JITCallable, BoundJITMethod, BoundConstexprFunction)) or is_builtin(fn):
        return False
    if any(fn is value for value in builtin_namespace.values()):
        return False
    owner = getattr(fn, "__self__", None)
    if owner is not None and not isinstance(owner, types.ModuleType):
        return not (
            isinstance(owner, (base_value, base_type, *_IMMUTABLE))
            or _from_triton(type(owner))
            or (isinstance(owner, type) and _from_triton(owner))
        )
    if isinstance(fn, type):
        return not (
            is_namedtuple(fn) or getattr(fn, "__triton_aggregate__", False) or _from_triton(fn) or fn in _IMMUTABLE
        )
    if _from_triton(fn) or getattr(fn, "__module__", None) == "math":
        return False
    if getattr(fn, "__module__", None) == "builtins" and getattr(builtins, fn.__name__, None) is fn:
        return fn.__name__ in _UNSAFE_BUILTINS
    return True


class CompileWatch:
    """Notes what a kernel reaches outside Triton while ``watching()`` one compile."""

    def __init__(self) -> None:
        self._library = _library_dirs()
        self.findings: list[str] = []

    def _candidate_frame(self, frame: types.FrameType) -> bool:
        filename = frame.f_code.co_filename
        if filename.startswith("<"):  # generated code (a dataclass's methods, say): its module's file
            filename = str(frame.f_globals.get("__file__", filename))
        if filename.startswith(self._library) or filename.startswith("<frozen "):
            return False
        caller = frame.f_back
        if caller is not None and caller.f_code.co_filename == _JIT_FILE and caller.f_code.co_name == "__call__":
            return False  # a constexpr_function: Triton's way of running Python at compile time
        globals_name = str(frame.f_globals.get("__name__", ""))
        return not (globals_name.startswith("namedtuple_") and frame.f_globals.get("_tuple_new") is tuple.__new__)

    def _trace(self, frame: types.FrameType, event: str, _arg: Any) -> None:
        if event == "call" and self._candidate_frame(frame):
            code = frame.f_code
            where = f"{os.path.basename(code.co_filename)}, line {code.co_firstlineno}"
            self._note(f"runs Python code `{code.co_name}` ({where})")

    def _note(self, finding: str) -> None:
        if finding not in self.findings:
            self.findings.append(finding)

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """Watches the code generator's calls and the Python frames run in this thread."""
        from triton.compiler.code_generator import CodeGenerator

        self.findings = []
        call_function = CodeGenerator.call_Function
        watch = self

        def checked_call(generator: Any, node: Any, fn: Any, args: Any, kws: Any) -> Any:
            if foreign(fn, generator.builtin_namespace):
                watch._note(f"calls {_callable_name(fn)}")
            return call_function(generator, node, fn, args, kws)

        previous = sys.gettrace()
        CodeGenerator.call_Function = checked_call  # type: ignore[method-assign]
        sys.settrace(self._trace)
        try:
            yield
        finally:
            sys.settrace(previous)
            CodeGenerator.call_Function = call_function  # type: ignore[method-assign]

    def problem(self, kernel: str) -> str:
        """The findings as one compile error, or "" when there are none."""
        if not self.findings:
            return ""
        return (
            f"kernel `{kernel}` " + "; ".join(self.findings[:5]) + " while it compiles. On a GPU that code runs "
            "once, at compile time, and does none of the kernel's work; under the CPU interpreter it runs at "
            "every launch. A kernel body may call only Triton functions, other @triton.jit functions and "
            "@triton.constexpr_function helpers (compile-time Python on constexpr values)."
        )
