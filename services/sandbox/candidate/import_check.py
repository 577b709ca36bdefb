"""Whether the candidate's module imports without Triton's interpreter, as it must on a GPU.

On CPU the candidate runs under ``TRITON_INTERPRET=1``, which its module can see at import
time (the environment variable, ``triton.knobs.runtime.interpret``, the class ``@triton.jit``
returns). A module that refuses to import without the interpreter would be a compile error on
a GPU; on CPU it must be one too, never a module judged on code a GPU would not run.

The check imports the module a second time, in a child forked before the candidate's own
import (so that nothing the first import registers, a ``torch.library`` op say, is there
twice), with the interpreter switched off as far as module-level code can see: the variable
unset, the knob off, ``@triton.jit`` returning ``JITFunction``. Kernels launched at import
time still run, through the interpreter, as they would on a GPU. The child closes the judge's
socket before any candidate code runs, answers through a pipe and exits.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

# How long the second import may take; module-level code that takes longer on a GPU host
# would hold up every evaluation of it there too.
IMPORT_SECONDS = 60.0
_MAX_REPORT_BYTES = 8000
_OK = b"ok"


class ImportCheck:
    """A second import of the candidate without the interpreter, running in a child process."""

    def __init__(self, pid: int, reader: int) -> None:
        self._pid = pid
        self._reader = reader

    @classmethod
    def start(cls, path: Path, close: Iterable[int], describe: Callable[[BaseException], str]) -> ImportCheck:
        """Forks the child that imports ``path``; ``close`` are the descriptors it must not keep
        (the judge's socket), ``describe`` turns an import failure into its report."""
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(reader)
            for fd in close:
                with contextlib.suppress(OSError):
                    os.close(fd)
            report = _import_without_interpreter(path, describe)
            with contextlib.suppress(OSError):
                os.write(writer, report[:_MAX_REPORT_BYTES])
            os._exit(0)
        os.close(writer)
        return cls(pid, reader)

    def result(self, timeout_seconds: float = IMPORT_SECONDS) -> str:
        """Waits for the child: "" when the module imported, else what went wrong."""
        deadline = time.monotonic() + timeout_seconds
        report = b""
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._reader], [], [], left)[0]:
                    return f"importing it without the interpreter did not finish within {timeout_seconds:.0f} s"
                chunk = os.read(self._reader, _MAX_REPORT_BYTES)
                if not chunk:
                    break
                report += chunk
        finally:
            self.stop()
        if report == _OK:
            return ""
        if not report:
            return "importing it without the interpreter ended the process"
        return report.decode("utf-8", "replace")

    def stop(self) -> None:
        """Ends the child, if it still runs, and reaps it."""
        if self._reader < 0:
            return
        os.close(self._reader)
        self._reader = -1
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self._pid, 0)


def _import_without_interpreter(path: Path, describe: Callable[[BaseException], str]) -> bytes:
    try:
        import torch
        import triton

        torch.set_num_threads(1)  # the parent's thread pool does not survive a fork
        triton.knobs.runtime.interpret = False
        os.environ.pop("TRITON_INTERPRET", None)
        _launch_through_interpreter(triton.knobs.runtime)
        spec = importlib.util.spec_from_file_location("candidate", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["candidate"] = module
        spec.loader.exec_module(module)
    except BaseException as error:  # noqa: BLE001 - whatever stops the import is the report
        return describe(error).encode("utf-8", "replace")
    return _OK


def _launch_through_interpreter(runtime: Any) -> None:
    """Kernels made without the interpreter run through it when launched or called, with the
    interpreter on only for that launch (Triton's language needs it while interpreting)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    interpreted: dict[int, InterpretedFunction] = {}

    def twin(kernel: Any) -> InterpretedFunction:
        return interpreted.setdefault(id(kernel), InterpretedFunction(kernel.fn))

    @contextlib.contextmanager
    def interpreting() -> Any:
        runtime.interpret = True
        try:
            yield
        finally:
            runtime.interpret = False

    def run(kernel: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
        with interpreting():
            return twin(kernel).run(*args, grid=grid, warmup=warmup, **kwargs)

    def call(kernel: Any, *args: Any, **kwargs: Any) -> Any:
        return twin(kernel)(*args, **kwargs)

    JITFunction.run = run  # type: ignore[method-assign]
    JITFunction.__call__ = call  # type: ignore[method-assign]
