"""What code an interpreted kernel really ran, so that the GPU compile check compiles that code.

Under ``TRITON_INTERPRET=1`` a kernel's body is ordinary Python: it can call any Python
function, run PyTorch, or be replaced after Triton read it, none of which a GPU could do. This
module keeps the CPU judge honest about three things, for every interpreted launch:

- **The source.** Triton's interpreter rewrites each @triton.jit function from its source text
  once; the text it rewrote is recorded here, and the compile check compiles exactly that text
  (gpu_compile.py), not whatever the source file or ``linecache`` holds later. A function the
  interpreter ran without source (defined from a string) has none to compile.
- **The code.** The function the interpreter runs must be the one its rewriter produced, with
  the code object it had then: a rewritten function whose code was swapped, or a function
  slipped into Triton's cache of rewrites, ran code that no compiler saw.
- **No PyTorch inside a kernel.** While a kernel's programs run (between the interpreter's
  language patching and its restore), a dispatch mode notes every PyTorch operator: a kernel
  body that reaches PyTorch (directly, through a constexpr-wrapped callable or a
  ``constexpr_function``) is doing its work outside Triton.
- **Compile-time Python runs once.** A ``@triton.constexpr_function`` runs while a kernel
  compiles on a GPU, once per distinct constexpr arguments; inside an interpreted kernel body
  its result is therefore computed once per arguments and reused, as a compiled kernel would,
  so that work hidden in one (NumPy on a tensor's memory, say) is not redone at every launch.

Findings are drained by the harness into each run's problems (``take_findings``).
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from triton.runtime.jit import ConstexprFunction

from services.sandbox.candidate.dispatch_mode import PlainDispatchMode

_NO_SOURCE = (
    "has no source file Triton could read (it was defined from a string, or its source went missing), "
    "so the interpreter ran its Python function as is; Triton compiles kernels from their source, so "
    "on a GPU it cannot compile"
)


@dataclass(frozen=True)
class RanCode:
    """What one interpreted launch ran: the function as written, the source text Triton
    rewrote it from (None when it has none), and the line of its ``def`` in that source's file;
    ``problem`` says why it cannot be compiled as it ran, when it cannot."""

    fn: Callable[..., Any]
    source: str | None
    def_line: int
    problem: str = ""


@dataclass(frozen=True)
class _Rewrite:
    original: Callable[..., Any]
    rewritten: Callable[..., Any]
    code: types.CodeType
    source: str | None
    def_line: int


class _OperatorLog(PlainDispatchMode):
    """Notes every PyTorch operator that runs while it is on the dispatch stack, and runs it."""

    def __init__(self, seen: list[str]) -> None:
        super().__init__()
        self.seen = seen

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.seen.append(str(func.name()).split(".", 1)[0])  # aten::add_, without the overload
        return func(*args, **(kwargs or {}))


class KernelCode:
    """Records the interpreter's rewrites and watches the bodies of interpreted launches."""

    def __init__(self) -> None:
        self._rewrites: dict[int, _Rewrite] = {}  # by id of the function as written
        self._by_rewritten: dict[int, _Rewrite] = {}
        self._lock = threading.Lock()
        self._local = threading.local()
        self._findings: list[str] = []
        self.patched: dict[str, Callable[..., Any]] = {}

    # Recording ------------------------------------------------------------------------------

    def ran(self, run_fn: Callable[..., Any]) -> RanCode:
        """What the interpreter ran when it called ``run_fn`` for a launch's programs."""
        rewrite = self._by_rewritten.get(id(run_fn))
        if rewrite is None or rewrite.rewritten is not run_fn:
            return RanCode(
                run_fn,
                None,
                0,
                "ran a function that Triton's interpreter did not produce from any kernel's source "
                "(its cache of rewritten kernels was changed)",
            )
        if run_fn.__code__ is not rewrite.code:  # type: ignore[attr-defined]
            return RanCode(rewrite.original, None, 0, "ran code swapped in after Triton rewrote it from its source")
        if rewrite.source is None:
            return RanCode(rewrite.original, None, 0, _NO_SOURCE)
        return RanCode(rewrite.original, rewrite.source, rewrite.def_line)

    def source_of(self, fn: Callable[..., Any]) -> tuple[str, int] | None:
        """The source text the interpreter rewrote ``fn`` from and its def line, if it did."""
        rewrite = self._rewrites.get(id(fn))
        if rewrite is None or rewrite.original is not fn or rewrite.source is None:
            return None
        return rewrite.source, rewrite.def_line

    def replaced(self) -> list[str]:
        """Kernels whose rewritten function in Triton's cache is no longer the one recorded."""
        from triton.runtime.interpreter import InterpretedFunction

        cache = InterpretedFunction.rewritten_fn
        with self._lock:
            rewrites = list(self._rewrites.values())
        return sorted(
            {
                getattr(r.original, "__name__", "?")
                for r in rewrites
                if cache.get(r.original) is not r.rewritten or r.rewritten.__code__ is not r.code  # type: ignore[attr-defined]
            }
        )

    def take_findings(self) -> list[str]:
        """What the watched launches did that no GPU kernel could, since the last call."""
        with self._lock:
            findings, self._findings = self._findings, []
        replaced = self.replaced()
        if replaced:
            findings.append(
                "the code Triton's interpreter runs for "
                + ", ".join(replaced)
                + " was replaced after Triton rewrote it from its source"
            )
        return findings

    def _note(self, finding: str) -> None:
        with self._lock:
            if finding not in self._findings:
                self._findings.append(finding)

    # Installation ---------------------------------------------------------------------------

    def install(self) -> None:
        """Wraps the interpreter's rewrite and language patching; call once, before any candidate
        code runs (and after cpu_support, whose closure fix the rewrite goes through)."""
        from triton.runtime import interpreter

        rewriter_class = interpreter.FunctionRewriter
        prepare, rewrite_ast = rewriter_class._prepare_source, rewriter_class.rewrite_ast
        code = self

        def prepare_source(rewriter: Any, lines: Any) -> Any:
            source = prepare(rewriter, lines)
            rewriter.drkernel_source = source
            return source

        def recorded_rewrite(rewriter: Any) -> Any:
            rewriter.drkernel_source = None
            rewritten = rewrite_ast(rewriter)
            source = rewriter.drkernel_source if rewritten is not rewriter.fn else None
            record = _Rewrite(rewriter.fn, rewritten, rewritten.__code__, source, rewriter.def_file_lineno)
            with code._lock:
                code._rewrites[id(rewriter.fn)] = record
                code._by_rewritten[id(rewritten)] = record
            return rewritten

        original_patch_lang = interpreter._patch_lang

        def patch_lang(fn: Any) -> Any:
            languages = _languages(fn)
            if getattr(code._local, "log", None) is None:  # a launch's programs start (not a device call)
                scope = original_patch_lang(fn)
                code._local.languages = languages
                code._watch_body(fn, scope)
                return scope
            # A device function called inside a launch's programs: Triton patches the language
            # again at every call (a quarter of the time of an interpreted l1_swish kernel) and
            # never restores it; where the launch patched the modules this function sees, it is a
            # no-op.
            if languages <= code._local.languages:
                return interpreter._LangPatchScope()
            code._local.languages |= languages
            return original_patch_lang(fn)

        constexpr_call = ConstexprFunction.__call__
        results: dict[Any, Any] = {}

        def once_per_arguments(function: Any, *args: Any, _semantic: Any = None, **kwargs: Any) -> Any:
            key = (id(function), args, tuple(sorted(kwargs.items())))
            if _semantic is not None or getattr(code._local, "log", None) is None or not _plain(key):
                return constexpr_call(function, *args, _semantic=_semantic, **kwargs)
            if key not in results:
                results[key] = (function, constexpr_call(function, *args, **kwargs))
            return results[key][1]

        rewriter_class._prepare_source = prepare_source  # type: ignore[method-assign]
        rewriter_class.rewrite_ast = recorded_rewrite  # type: ignore[method-assign]
        interpreter._patch_lang = patch_lang
        ConstexprFunction.__call__ = once_per_arguments  # type: ignore[method-assign]
        self.patched = {
            "FunctionRewriter._prepare_source": prepare_source,
            "FunctionRewriter.rewrite_ast": recorded_rewrite,
            "interpreter._patch_lang": patch_lang,
            "ConstexprFunction.__call__": once_per_arguments,
        }

    def _watch_body(self, fn: Any, scope: Any) -> None:
        """Notes PyTorch operators from here until the interpreter restores the language."""
        seen: list[str] = []
        log = _OperatorLog(seen)
        depth = torch._C._len_torch_dispatch_stack()
        log.__enter__()
        self._local.log = log
        restore = scope.restore

        def restore_and_stop() -> None:
            self._local.log = None
            if torch._C._len_torch_dispatch_stack() != depth + 1:
                self._note(f"kernel `{fn.__name__}` changed PyTorch's dispatch mode stack inside its body")
            log.__exit__(None, None, None)
            if seen:
                names = ", ".join(sorted(set(seen))[:8])
                self._note(
                    f"kernel `{fn.__name__}` ran PyTorch operators inside its body ({names}): under the CPU "
                    "interpreter a kernel can call Python, on a GPU it cannot; the work is PyTorch's, not Triton's"
                )
            restore()

        scope.restore = restore_and_stop

    def current_patches(self) -> dict[str, Any]:
        """The objects now in the patched places, to detect a candidate undoing them."""
        from triton.runtime import interpreter

        return {
            "FunctionRewriter._prepare_source": interpreter.FunctionRewriter._prepare_source,
            "FunctionRewriter.rewrite_ast": interpreter.FunctionRewriter.rewrite_ast,
            "interpreter._patch_lang": interpreter._patch_lang,
            "ConstexprFunction.__call__": ConstexprFunction.__call__,
        }


def _languages(fn: Any) -> set[int]:
    """The language modules Triton's interpreter patches for ``fn``: those in its globals."""
    import triton.language as tl

    return {id(value) for value in fn.__globals__.values() if value is tl or value is tl.core}


def _plain(value: Any) -> bool:
    """Whether ``value`` is made of constexpr-like values only (numbers, strings, dtypes, tuples)."""
    import triton.language as tl

    if isinstance(value, tuple):
        return all(_plain(item) for item in value)
    return isinstance(value, (int, float, str, bool, type(None), tl.dtype, tl.constexpr))
