"""Records every Triton kernel launch in the candidate's process.

Two paths cover every way a kernel can run. Compiled kernels (GPU) all go through
``CompiledKernel.launch_metadata`` right before the driver launch, whether they were started
by ``kernel[grid](...)``, an autotuner, heuristics or a CompiledKernel called directly. The
interpreter (CPU) runs each launch through ``GridExecutor``, which announces the grid to
``interpreter_builder.set_grid_dim``. A kernel is the candidate's own when its Python function
was defined in the candidate's file; a launch of zero programs runs nothing and is kept with
``programs=0`` so that it never counts as work.

A CUDA graph replay runs its captured kernels without passing through Triton. The launches
made while a ``torch.cuda.CUDAGraph`` was capturing are kept with that graph, and every
replay of it records them again (on the stream it replays on): an honest candidate that
captures its own kernels once and replays them is seen doing its work on every call.

Each compiled launch also says whether the work probe (candidate/work.py) could watch it
(LaunchRecord.unwatched): it cannot watch a launch recorded into a graph being captured, a
replay, or a CompiledKernel launched other than through ``JITFunction.run``. That is decided
here from what the candidate cannot reach by setting attributes of the objects it finds: the
frame that called ``launch_metadata`` (Triton's own ``JITFunction.run``, or not) and CUDA's
capture status of the current stream, both captured when the wrappers are installed. Any
other launch went through the probe's entry point, so in a checked call the judge must have
been asked about it (judge/work.py ``unasked``), whether or not the probe was switched off.
"""

from __future__ import annotations

import inspect
import math
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import torch
import triton.language as tl
from triton._utils import find_paths_if, get_iterable_path
from triton.runtime.jit import mangle_type

from services.profiler import TRITON_RANGE_PREFIX
from services.sandbox.candidate.captured import CapturedWork
from services.sandbox.candidate.kernel_code import KernelCode, RanCode
from services.sandbox.wire.judge_candidate import LaunchRecord, Unwatched, Wrote

# One recorded launch: name, own, programs, stored bytes, stream, why the probe cannot watch it.
_Launch = tuple[str, bool, int, int | None, int | None, Unwatched | None]


@dataclass(frozen=True)
class CompileRequest:
    """What is needed to compile one interpreted launch ahead of time for a GPU target.

    ``fn`` is the kernel's own Python function (not the interpreter's rewrite of it), so that
    the compile check builds the kernel from it instead of importing the candidate again, and
    ``source`` the text the interpreter rewrote it from (kernel_code.py; None: read it from
    ``fn``), with its ``def`` at ``def_line``. ``problem`` says why what ran cannot be compiled
    at all. ``constexprs`` is keyed by argument path, as Triton keys them: ``(i,)`` for
    parameter ``i``, ``(i, j)`` for element ``j`` of a tuple argument.
    """

    fn: Callable[..., Any] = field(compare=False, repr=False)
    signature: dict[str, Any]
    constexprs: dict[tuple[int, ...], Any] = field(hash=False)
    options: dict[str, int] = field(hash=False)
    source: str | None = None
    def_line: int = 0
    problem: str = ""

    @property
    def name(self) -> str:
        return self.fn.__name__

    def key(self) -> tuple[Any, ...]:
        """What makes two launches compile alike: the code, its signature, constexprs and
        options, and the plain values its closure captures. A kernel defined in a function is
        a new function object at every call, and needs compiling only once."""
        return (
            self.fn.__code__,
            self.source,
            self.problem,
            repr(self.signature),
            repr(self.constexprs),
            repr(self.options),
            *_captured(self.fn),
        )

    def describe(self) -> str:
        """The kernel as compiled: parameter types, constexpr values and launch options."""
        constexprs = {path: value for path, value in self.constexprs.items() if len(path) == 1}
        parts = [
            f"{name}={constexprs[(index,)]!r}" if (index,) in constexprs else f"{name}: {_type_text(kind)}"
            for index, (name, kind) in enumerate(self.signature.items())
        ]
        options = "".join(f", {key}={value}" for key, value in sorted(self.options.items()))
        return f"{self.name}({', '.join(parts)}){options}"


def _captured(fn: Callable[..., Any]) -> list[str]:
    values = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # not filled yet
            continue
        if isinstance(value, (tl.constexpr, int, float, str, type(None))):
            values.append(repr(value))
    return values


def _type_text(kind: Any) -> str:
    return "(" + ", ".join(_type_text(k) for k in kind) + ")" if isinstance(kind, tuple) else str(kind)


def _triton_type(value: Any) -> Any:
    """Triton's own type string for a launch argument (``*fp32``, ``i64``, ``tensordesc<fp16[64, 64]>``,
    a tuple of them for a tuple), without the value specialisations a GPU launch adds."""
    try:
        return mangle_type(value)
    except TypeError:  # a value only a constexpr parameter can take (a dtype, a function)
        return "constexpr"


def compile_request(
    fn: Callable[..., Any], constexpr_names: Sequence[str], args: tuple, kwargs: dict, ran: RanCode | None = None
) -> CompileRequest:
    """The signature Triton would compile this call with (without its specialisations); ``ran``
    is what the interpreter ran for ``fn`` (its source, or why it has none)."""
    parameters = inspect.signature(fn).parameters
    bound = {name: p.default for name, p in parameters.items() if p.default is not inspect.Parameter.empty}
    bound.update(zip(parameters, args, strict=False))
    bound.update({k: v for k, v in kwargs.items() if k in parameters})
    values = [bound.get(name) for name in parameters]
    kinds = [
        "constexpr" if name in constexpr_names else _triton_type(value)
        for name, value in zip(parameters, values, strict=False)
    ]
    paths = find_paths_if(kinds, lambda _, kind: kind == "constexpr")
    constexprs = {path: get_iterable_path(values, path) for path in paths}
    options = {
        k: int(kwargs[k]) for k in ("num_warps", "num_stages", "num_ctas", "maxnreg") if kwargs.get(k) is not None
    }
    signature = dict(zip(parameters, kinds, strict=False))
    if ran is None:
        return CompileRequest(fn, signature, constexprs, options)
    return CompileRequest(ran.fn, signature, constexprs, options, ran.source, ran.def_line, ran.problem)


def launch_path(
    run: Callable[..., Any], frame: Callable[[int], FrameType], capturing: Callable[[], bool]
) -> Callable[[], Unwatched | None]:
    """What tells, inside ``CompiledKernel.launch_metadata``, why the probe cannot watch the
    launch being made (module docstring). ``run`` is Triton's own ``JITFunction.run``, which
    calls ``launch_metadata`` itself; ``frame`` is ``sys._getframe``; ``capturing`` is CUDA's
    capture status of the current stream (the one Triton launches on). All three are held
    here, out of reach of attributes the candidate can set."""
    if not run.__module__.startswith("triton."):
        raise RuntimeError(f"JITFunction.run is already wrapped (by {run.__module__}): install the recorder first")
    code = run.__code__

    def unwatched() -> Unwatched | None:
        # the caller of the launch_metadata wrapper that calls this
        if frame(2).f_code is not code:
            return "direct"
        return "capture" if capturing() else None

    return unwatched


class LaunchRecorder:
    """Patches Triton's launch paths; ``take()`` returns and clears what ran since.

    ``stored_bytes`` tells, for interpreted launches, how many bytes a launch wrote (from the
    interpreter monitor): a launch that writes nothing did no work. Compiled launches cannot
    say, and report None. ``kernel_code`` (CPU) says what each interpreted launch ran, for
    its compile request; every interpreted launch gets one, whichever file its kernel is in.
    ``wrote`` is what the work probe (candidate/work.py) saw a launch do to its arguments in a
    checked call, on both devices (``annotate``); ``unwatched`` why it could not see one
    (``launch_path``, ``_record_replay``).
    """

    def __init__(self, own_file: str, stored_bytes: Callable[[], int], kernel_code: KernelCode | None = None) -> None:
        self.own_file = own_file
        self._stored_bytes = stored_bytes
        self._kernel_code = kernel_code
        self._lock = threading.Lock()
        self._launches: list[_Launch] = []
        self._wrote: dict[int, Wrote] = {}  # by position in _launches
        self._own = 0  # own launches recorded since take(), replays left out
        self.replayed: Callable[[Any], None] = lambda _graph: None  # told of every graph replay
        self._compile_requests: dict[tuple[Any, ...], CompileRequest] = {}
        self._current = threading.local()
        self._capturing = threading.local()  # the graph being captured on this thread, if any
        self.patched: dict[str, Callable[..., Any]] = {}
        self._writers: frozenset[Any] = frozenset()  # the code of the wrappers that may record
        self._forged = 0  # records refused since take_findings(): written by other code

    def _record(
        self,
        name: str,
        filename: str | None,
        grid: Sequence[int],
        stored: int | None,
        stream: int | None = None,
        unwatched: Unwatched | None = None,
    ) -> None:
        # On the timed path: keep it to a frame check and a tuple append.
        if sys._getframe(1).f_code not in self._writers:  # called from outside Triton's launch paths
            self._forged += 1
            return
        programs = math.prod(grid) if grid else 0
        launch = (name, filename == self.own_file, programs, stored, stream, unwatched)
        graph = getattr(self._capturing, "graph", None)
        with self._lock:
            self._launches.append(launch)
            self._own += launch[1]
            if graph is not None:
                graph.drkernel_captured_launches.append(launch)

    def _record_replay(self, graph: Any, stream: int) -> None:
        """A replay ran the graph's captured launches again, on ``stream``."""
        captured = getattr(graph, "drkernel_captured_launches", ())
        with self._lock:
            self._launches.extend(
                (name, own, programs, stored, stream, "replay") for name, own, programs, stored, _, _ in captured
            )

    def position(self) -> int:
        """Where the next launch will be recorded (for ``annotate``)."""
        with self._lock:
            return len(self._launches)

    def annotate(self, since: int, wrote: Wrote) -> None:
        """Says what the own launches recorded from position ``since`` on wrote."""
        with self._lock:
            for index in range(since, len(self._launches)):
                if self._launches[index][1]:
                    self._wrote[index] = wrote

    def capturing(self) -> Any:
        """The CUDA graph this thread is capturing, or None."""
        return getattr(self._capturing, "graph", None)

    def streams(self) -> set[int]:
        """The CUDA streams the candidate's own kernels were launched on since the last take()."""
        with self._lock:
            return {stream for _, own, _, _, stream, _ in self._launches if own and stream is not None}

    def own_launches(self) -> int:
        """How many launches of the candidate's own kernels ran since the last take() (graph
        replays left out)."""
        with self._lock:
            return self._own

    def take(self) -> list[LaunchRecord]:
        with self._lock:
            launches, self._launches, self._own = self._launches, [], 0
            wrote, self._wrote = self._wrote, {}
        return [
            LaunchRecord(
                name=n,
                own=own,
                programs=max(int(p), 0),
                stored_bytes=stored,
                stream=stream,
                wrote=wrote.get(index),
                unwatched=unwatched,
            )
            for index, (n, own, p, stored, stream, unwatched) in enumerate(launches)
        ]

    def take_findings(self) -> list[str]:
        """A finding when code other than the launch wrappers tried to add launch records since
        the last call (reached up the candidate's own stack: a forged launch)."""
        forged, self._forged = self._forged, 0
        if not forged:
            return []
        return [f"it tried to add {forged} launch record(s) outside Triton's launch paths (forged launches)"]

    def compile_requests(self) -> list[CompileRequest]:
        """The distinct interpreted launches seen so far (of every kernel, the candidate's own or not)."""
        with self._lock:
            return list(self._compile_requests.values())

    def install(self) -> None:
        """Wraps both launch paths; call once, before any candidate code runs (and before the
        work probe wraps ``JITFunction.run``)."""
        from triton.compiler.compiler import CompiledKernel
        from triton.runtime import interpreter
        from triton.runtime.jit import JITFunction

        original_metadata = CompiledKernel.launch_metadata
        recorder = self
        unwatched = launch_path(JITFunction.run, sys._getframe, torch._C._cuda_isCurrentStreamCapturing)

        def launch_metadata(kernel: Any, grid: Sequence[int], stream: Any, *args: Any) -> Any:
            fn = getattr(getattr(kernel.src, "fn", None), "fn", None)
            filename = getattr(getattr(fn, "__code__", None), "co_filename", None)
            recorder._record(
                kernel.name, filename, tuple(grid), None, int(stream) if stream is not None else None, unwatched()
            )
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
            recorder._record(
                fn.__name__, fn.__code__.co_filename, recorder._current.grid or (), recorder._stored_bytes()
            )
            return result

        builder = interpreter.interpreter_builder
        original_set_grid = builder.set_grid_dim

        def set_grid_dim(nx: int, ny: int, nz: int) -> Any:
            current = getattr(recorder._current, "executor", None)
            if current is not None:
                executor, args, kwargs = current
                recorder._current.grid = (nx, ny, nz)
                ran = recorder._kernel_code.ran(executor.fn) if recorder._kernel_code is not None else None
                request = compile_request(executor.fn, executor.constexprs, args, kwargs, ran)
                with recorder._lock:
                    recorder._compile_requests.setdefault(request.key(), request)
            return original_set_grid(nx, ny, nz)

        self._writers = frozenset({launch_metadata.__code__, grid_call.__code__})
        CompiledKernel.launch_metadata = launch_metadata  # type: ignore[method-assign]
        interpreter.GridExecutor.__call__ = grid_call  # type: ignore[method-assign]
        builder.set_grid_dim = set_grid_dim  # type: ignore[method-assign]
        self.patched = {
            "CompiledKernel.launch_metadata": launch_metadata,
            "GridExecutor.__call__": grid_call,
            "interpreter_builder.set_grid_dim": set_grid_dim,
            **self.install_graph_hooks(torch.cuda.CUDAGraph),
        }

    def install_graph_hooks(self, graph_class: type) -> dict[str, Callable[..., Any]]:
        """Wraps CUDAGraph capture and replay (torch.cuda.graph and make_graphed_callables
        use them too) so that replays count the launches their capture recorded."""
        begin, end, replay = graph_class.capture_begin, graph_class.capture_end, graph_class.replay
        recorder = self

        def capture_begin(graph: Any, *args: Any, **kwargs: Any) -> Any:
            graph.drkernel_captured_launches = []
            graph.drkernel_work = CapturedWork()
            result = begin(graph, *args, **kwargs)
            recorder._capturing.graph = graph
            return result

        def capture_end(graph: Any, *args: Any, **kwargs: Any) -> Any:
            recorder._capturing.graph = None
            return end(graph, *args, **kwargs)

        def replay_graph(graph: Any, *args: Any, **kwargs: Any) -> Any:
            result = replay(graph, *args, **kwargs)
            recorder._record_replay(graph, torch.cuda.current_stream().cuda_stream)
            recorder.replayed(graph)
            return result

        graph_class.capture_begin = capture_begin  # type: ignore[method-assign]
        graph_class.capture_end = capture_end  # type: ignore[method-assign]
        graph_class.replay = replay_graph  # type: ignore[method-assign]
        return {
            "CUDAGraph.capture_begin": capture_begin,
            "CUDAGraph.capture_end": capture_end,
            "CUDAGraph.replay": replay_graph,
        }

    def current_patches(self) -> dict[str, Any]:
        """The objects now in the patched places, to detect a candidate undoing them."""
        from triton.compiler.compiler import CompiledKernel
        from triton.runtime import interpreter

        graph_class = torch.cuda.CUDAGraph
        return {
            "CompiledKernel.launch_metadata": CompiledKernel.launch_metadata,
            "GridExecutor.__call__": interpreter.GridExecutor.__call__,
            "interpreter_builder.set_grid_dim": interpreter.interpreter_builder.set_grid_dim,
            "CUDAGraph.capture_begin": graph_class.capture_begin,
            "CUDAGraph.capture_end": graph_class.capture_end,
            "CUDAGraph.replay": graph_class.replay,
        }
