"""The candidate's process: runs inside the sandbox and answers the judge's commands.

Started before it is needed (torch, Triton and the launch instrumentation already loaded, the
device initialised, the seccomp filter in place) and used for exactly one evaluation. It never
sees the task's model, the reference outputs or the comparison: it builds ModelNew and its
inputs from specs, runs checked forward calls and reports outputs, launches and anything
suspicious (mutated inputs, writes after return, odd output types, tampering).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import faulthandler
import importlib.util
import os
import socket
import sys
import time
import traceback
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from triton.compiler.errors import CompilationError

from services.profiler import (
    JUDGE_RANGE,
    TRITON_RANGE_PREFIX,
    KernelTime,
    RangeCounts,
    profile_judged_calls,
    start_cuda_tracing,
)
from services.sandbox.candidate import cpu_support, seccomp_policy
from services.sandbox.candidate.bounds import InterpreterMonitor
from services.sandbox.candidate.dispatch_mode import no_modes
from services.sandbox.candidate.gpu_compile import LanguageSnapshot, compile_requests
from services.sandbox.candidate.import_check import ImportCheck
from services.sandbox.candidate.integrity import IntegrityWatch, InterpreterWatch, LibraryCode, OperatorRecording
from services.sandbox.candidate.introspection import IntrospectionGuard
from services.sandbox.candidate.kernel_code import KernelCode
from services.sandbox.candidate.launches import LaunchRecorder
from services.sandbox.candidate.streams import StreamWatch
from services.sandbox.candidate.trace import PyTorchTrace, held_tensors
from services.sandbox.candidate.triton_warm_up import warm_up_triton
from services.sandbox.candidate.work import Replacement, WorkProbe
from services.sandbox.shared import tensor_bits
from services.sandbox.shared.clock import Clock, GraphedCalls, sample_values, superseded
from services.sandbox.shared.runner import ModelRunner, flatten_outputs
from services.sandbox.shared.tensor_bits import Snapshot
from services.sandbox.wire import cuda_share
from services.sandbox.wire.framing import Shutdown, receive, send
from services.sandbox.wire.judge_candidate import (
    COMMAND,
    ORDER,
    CandidateFailed,
    CompileResult,
    ErrorKind,
    Failure,
    GraphCaptured,
    LaunchQuery,
    LaunchRecord,
    Loaded,
    Problem,
    ProfiledKernel,
    Ready,
    RunResult,
    SampleResult,
    TrialResult,
)
from services.sandbox.wire.tensors import pack_tensors

CANDIDATE_FILE = "candidate.py"
# Device memory the allocator may keep cached but unused after a checked call before it is
# given back (release_cached_memory).
_CACHED_LIMIT_BYTES = 1 << 30


def _same_layout(old: Any, new: Any) -> bool:
    return (
        isinstance(old, torch.Tensor)
        and isinstance(new, torch.Tensor)
        and (old.shape, old.dtype, old.device, old.stride(), old.requires_grad)
        == (new.shape, new.dtype, new.device, new.stride(), new.requires_grad)
    )


def _refilled(old: Any, new: Any) -> Any:
    tensor_bits.copy_into(old, new)  # through .data: the version counter does not move
    return old


def describe_exception(error: BaseException, own_file: str) -> str:
    """The exception line plus where in the candidate's code it came from."""
    lines = traceback.format_exception_only(type(error), error)
    message = "".join(lines).strip()
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == own_file]
    if frames:
        frame = frames[-1]
        message += f"\n  at {CANDIDATE_FILE}, line {frame.lineno}, in {frame.name}: {(frame.line or '').strip()}"
    return message[:8000]


class Harness:
    """Serves the judge's commands over one socket."""

    def __init__(self, sock: socket.socket, device: Any, scratch: Path, l2_flush_bytes: int) -> None:
        self.sock = sock
        self.device = device
        self.scratch = scratch
        self.own_file = str(scratch / CANDIDATE_FILE)
        self.language = LanguageSnapshot() if device.type == "cpu" else None
        self.kernel_code = KernelCode() if device.type == "cpu" else None
        if self.kernel_code is not None:  # what the interpreter lacks, before any candidate code runs
            cpu_support.install()
            self.kernel_code.install()
        self.interpreter = InterpreterMonitor()
        self.interpreter.install()
        self.recording = OperatorRecording()
        self.recording.install()
        self.introspection = IntrospectionGuard()
        self.recorder = LaunchRecorder(self.own_file, self.interpreter.last_stored_bytes, self.kernel_code)
        self.recorder.install()
        self.streams = StreamWatch()
        if device.type == "cuda":
            self.streams.install()
        self._device_sync = torch._C._cuda_synchronize if device.type == "cuda" else (lambda: None)
        # Checked calls: under the profiler (Load.profile), with the work probe and the
        # PyTorch trace; the judge's own work inside them is ``quiet``.
        self._profile = False
        self._judge_ranges = 0  # quiet() ranges opened in the profiled call
        self._forged_ranges: list[str] = []  # findings: ranges the profiled call's forward named like the judge's
        self.probe = WorkProbe(self.own_file, self.recorder, self.quiet, self.recorder.capturing, self._device_sync)
        self.probe.install()
        self.recorder.replayed = self.probe.replayed
        self.trace = PyTorchTrace(
            lambda: self.probe.launches,
            self.quiet,
            self.recorder.capturing,
            unwatched=lambda: self.recorder.own_launches() > self.probe.launches,
        )
        self.clock = Clock(device, l2_flush_bytes)
        self._sleep = time.sleep
        self._cached_bytes = (
            (lambda: torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))
            if device.type == "cuda"
            else (lambda: 0)
        )
        self._empty_cache = torch.cuda.empty_cache
        self._perf_counter = time.perf_counter
        # The flag itself: torch.use_deterministic_algorithms also sets TorchInductor's, which
        # imports TorchInductor and TorchDynamo (1.6 s of CPU), and no judged call uses them.
        self._set_deterministic = torch._C._set_deterministic_algorithms
        if device.type == "cuda":
            # On a GPU some PyTorch APIs still load them on first use (an H100 evaluation took
            # about 5 s longer when that happened in it): here, in the warm pool and before the
            # integrity baseline, since their import re-wraps a few torch functions.
            importlib.import_module("torch._inductor.config")
        # On CPU, what the interpreter computes with is compared at every launch too.
        self.launch_watch = InterpreterWatch() if device.type == "cpu" else None
        if self.launch_watch is not None:
            self.interpreter.watch_launches(self.launch_watch.launch)
        self.library_code = LibraryCode(interpreted=device.type == "cpu")
        self.watch = IntegrityWatch(
            extra=lambda: {
                **self.library_code.current_patches(),
                **self.recorder.current_patches(),
                **self.interpreter.current_patches(),
                **self.recording.current_patches(),
                **(self.kernel_code.current_patches() if self.kernel_code is not None else {}),
                **self.probe.current_patches(),
                **(self.streams.current_patches() if self.streams.patched else {}),
            },
            instruments={
                "LaunchRecorder": self.recorder,
                "WorkProbe": self.probe,
                "PyTorchTrace": self.trace,
                "StreamWatch": self.streams,
                "OperatorRecording": self.recording,
                "IntrospectionGuard": self.introspection,
                "InterpreterMonitor": self.interpreter,
                **({"KernelCode": self.kernel_code} if self.kernel_code is not None else {}),
                **({"InterpreterWatch": self.launch_watch} if self.launch_watch is not None else {}),
                **(
                    {"interpreter_builder": importlib.import_module("triton.runtime.interpreter").interpreter_builder}
                    if device.type == "cpu"
                    else {}
                ),
            },
            found=self.launch_watch.found if self.launch_watch is not None else None,
        )
        self._share = device.type == "cuda" and cuda_share.available()
        self._shared: list[Any] = []  # outputs handed over by descriptor, freed at the next command
        self.module: Any = None
        self._last_inputs: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()
        self._timed_outputs: list[Any] = []
        self._graph: GraphedCalls | None = None
        self._warm = False
        self.runner: Any = None

    # Commands ---------------------------------------------------------------------------

    def warm_up(self) -> None:
        """Starts the profiler's CUDA tracing (CUPTI, 5-7 s), creates the CUDA context and makes
        a first Triton launch (triton_warm_up.py) while the process waits in the warm pool,
        before any candidate code exists, so that an evaluation pays none of them. CUPTI starts
        fastest before the context exists."""
        if self.device.type != "cuda" or self._warm:
            return
        start_cuda_tracing(self.device)
        self._start_device()
        warm_up_triton(self.device, self.scratch / ".triton-warm-up")
        self.recorder.take()  # the harness's own launch is no candidate's
        self._warm = True

    def _start_device(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.init()
            torch.cuda.set_device(self.device)
        self.clock.prepare()

    def load(self, command: Any) -> Any:
        if not self._warm:
            self._start_device()
        device_name = torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu"
        path = Path(self.own_file)
        path.write_text(command.candidate_source)
        spec = importlib.util.spec_from_file_location("candidate", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        self.introspection.arm()  # from here on candidate code may run
        # On CPU, a second import without the interpreter, as on a GPU (import_check.py).
        without_interpreter = (
            ImportCheck.start(path, [self.sock.fileno()], lambda e: describe_exception(e, self.own_file))
            if self.device.type == "cpu"
            else None
        )
        sys.modules["candidate"] = module
        try:
            spec.loader.exec_module(module)
        except BaseException as error:
            if without_interpreter is not None:
                without_interpreter.stop()
            raise CandidateFailed(
                "compile", "importing the candidate failed: " + describe_exception(error, self.own_file)
            ) from error
        problem = without_interpreter.result() if without_interpreter is not None else ""
        if problem:
            raise CandidateFailed(
                "compile",
                "the module cannot be imported without Triton's interpreter, as it must be on a GPU: " + problem,
            )
        model_class = getattr(module, "ModelNew", None)
        if not isinstance(model_class, type):
            raise CandidateFailed("compile", "the candidate defines no class ModelNew")
        self.module = module
        self._profile = command.profile
        self.runner = ModelRunner(command.inputs_source, lambda _constants: model_class, self.device, self.scratch)
        spec = command.spec
        if spec.init_on_device:
            try:
                model = self.runner.model(spec)
            except torch.OutOfMemoryError as error:
                raise CandidateFailed(
                    "runtime", "out of memory building ModelNew: " + describe_exception(error, self.own_file)
                ) from error
            except Exception:  # noqa: BLE001 - a constructor that needs host tensors: built there instead
                spec = dataclasses.replace(spec, init_on_device=False)
        if not spec.init_on_device:
            model = self._model(spec)
        loaded = Loaded(
            parameters=sum(p.numel() for p in model.parameters()),
            device_name=device_name,
            init_on_device=spec.init_on_device,
        )
        return loaded, b"", []

    def _model(self, spec: Any) -> Any:
        try:
            return self.runner.model(spec)
        except torch.OutOfMemoryError as error:
            raise CandidateFailed(
                "runtime", "out of memory building ModelNew: " + describe_exception(error, self.own_file)
            ) from error
        except BaseException as error:
            raise CandidateFailed(
                "construct", "building ModelNew failed: " + describe_exception(error, self.own_file)
            ) from error

    def _forward(self, model: Any, inputs: list[Any], spec: Any) -> Any:
        try:
            return flatten_outputs(self.runner.forward(model, inputs, spec))
        except BaseException as error:
            kind = "compile" if _is_compilation_error(error) else "runtime"
            raise CandidateFailed(kind, describe_exception(error, self.own_file)) from error

    def _in_place_of_last(self, model: Any, inputs: list[Any]) -> list[Any]:
        """This call's input values written into the tensors of the previous judged call on the
        same model, where shapes allow: the same objects at the same addresses with their
        version counters untouched. A cache keyed on id(), data_ptr() or _version then always
        hits and serves a stale result, instead of depending on the allocator reusing memory."""
        previous = self._last_inputs.get(model)
        if previous is not None and len(previous) == len(inputs):
            inputs = [
                _refilled(old, new) if _same_layout(old, new) else new
                for old, new in zip(previous, inputs, strict=False)
            ]
        self._last_inputs[model] = inputs
        return inputs

    def run(self, command: Any) -> Any:
        spec = command.spec
        model = self._model(spec)
        inputs = self._in_place_of_last(model, self.runner.inputs(spec))
        try:
            pristine = {i: Snapshot(x) for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)}
        except torch.OutOfMemoryError as error:
            raise CandidateFailed("resources", f"remembering the inputs ran out of device memory: {error}") from error
        self.recorder.take()
        self.trace.begin(
            ((inputs[i], snapshot) for i, snapshot in pristine.items()), held_tensors([model, self.module])
        )
        self._set_deterministic(True, warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = True
        try:
            outputs, at_return, seconds, returned_at, kernels = self._checked_forward(model, inputs, spec)
        finally:
            self._set_deterministic(False)
        matches, unseen = self.trace.matches(outputs), self.trace.unseen(outputs)
        problems = [p for i, o in enumerate(outputs) for p in self._layout_problems(i, o)]
        findings = (
            self.recording.take()
            + self.introspection.take_findings()
            + self.probe.take_findings()
            + self.recorder.take_findings()
            + (self.kernel_code.take_findings() if self.kernel_code is not None else [])
            + self._forged_ranges
        )
        problems += [Problem(severity="hack", message=m) for m in findings]
        self._settle(command.late_write_wait_seconds, returned_at)
        if not all(snapshot.unchanged(o) for snapshot, o in zip(at_return, outputs, strict=False)):
            problems.append(
                Problem(
                    severity="hack",
                    message=(
                        "an output changed after forward returned "
                        "(work finished late, e.g. in a thread or on another stream)"
                    ),
                )
            )
        mutated = [i for i, snapshot in pristine.items() if not snapshot.unchanged(inputs[i])]
        del pristine, at_return
        allowed = set(command.mutable_inputs)
        unexpected = [i for i in mutated if i not in allowed]
        if unexpected:
            problems.append(
                Problem(
                    severity="incorrect",
                    message=f"forward modified its input(s) {unexpected}, which the reference leaves unchanged",
                )
            )
        modified = [i for i in mutated if i in allowed]
        handed = [tensor_bits.detached(o) for o in outputs] + [tensor_bits.detached(inputs[i]) for i in modified]
        try:
            metas, payload, fds, self._shared = pack_tensors(handed, self._exporter if self._share else None)
        except (torch.OutOfMemoryError, RuntimeError) as error:
            raise CandidateFailed("resources", f"handing the outputs over ran out of device memory: {error}") from error
        launches = self.recorder.take()
        own = {launch.name for launch in launches if launch.own and launch.programs > 0}
        result = RunResult(
            outputs=metas,
            launches=launches,
            problems=problems,
            tampered=self.watch.changed(),
            seconds=seconds,
            overwritten=self.probe.knocked_out,
            kernels=[
                ProfiledKernel(name=k.name, launches=k.launches, time_us=k.time_us, own=k.name in own) for k in kernels
            ],
            pytorch_matches=matches,
            unseen_outputs=unseen,
            outside=self.trace.outside(),
            output_strides=[list(o.stride()) for o in outputs],
            modified_inputs=modified,
        )
        return result, payload, fds

    def _checked_forward(
        self, model: Any, inputs: list[Any], spec: Any
    ) -> tuple[list[Any], list[Snapshot], float, float, list[KernelTime]]:
        """One forward call with the work probe armed and the PyTorch trace on, under the
        profiler when the evaluation profiles: every checked call alike, knock-out or not.
        The outputs are remembered the moment forward returns (a write after that is late),
        before the profiler's own bookkeeping; the seconds are forward's own, and the clock
        reading at its return is when the wait for late writes began."""
        outputs: list[Any] = []
        at_return: list[Snapshot] = []
        clock: list[float] = []  # forward's start and return
        self._forged_ranges = []

        def call() -> None:
            clock.append(self._perf_counter())
            with self.trace, self.probe.armed(self._ask, self.trace):
                outputs.extend(self._forward(model, inputs, spec))
            clock.append(self._perf_counter())
            with self.quiet():
                at_return.extend(Snapshot(o) for o in outputs)

        kernels: list[KernelTime] = []
        if self._profile:
            self.interpreter.take_traffic()
            self._judge_ranges = 0
            kernels, ranges = profile_judged_calls(call, 1, self.device, self.interpreter.take_traffic)
            self._forged_ranges = _range_findings(ranges, self._judge_ranges, self.device.type == "cpu")
        else:
            call()
        started, returned_at = clock
        return outputs, at_return, returned_at - started, returned_at, kernels

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """The judge's own tensor work inside a checked call: no dispatch mode sees it, no
        torch function mode or subclass answers for it (a candidate's mode once made the
        judge's ``isnan`` say all True), and the profile leaves it out (JUDGE_RANGE). It does
        not wait for the device: a write right after forward returns must still be seen as late."""
        self._judge_ranges += 1
        with no_modes(), torch.profiler.record_function(JUDGE_RANGE):
            yield

    def _ask(self, kernel: str) -> Replacement | None:
        """Whether to knock out what ``kernel`` writes in this call, and with what: the judge
        decides, asked right after the kernel's first launch in the call (candidate/work.py)."""
        send(self.sock, LaunchQuery(kernel=kernel[:512]))
        order, _ = receive(self.sock, ORDER, max_payload_bytes=0)
        if not order.knock_out:
            return None
        return "zeros" if order.zeros else "values"

    @staticmethod
    def _exporter(tensor: Any) -> tuple[int, Any] | None:
        if not tensor.is_cuda or tensor.numel() * tensor.element_size() < cuda_share.MIN_SHARED_BYTES:
            return None
        exported = cuda_share.export(tensor)
        return exported.fd, exported

    def _layout_problems(self, index: int, output: Any) -> list[Problem]:
        if type(output) is not torch.Tensor:
            return [
                Problem(
                    severity="hack", message=f"output {index} is a {type(output).__name__}, not a plain torch.Tensor"
                )
            ]
        problems = []
        if output.device != self.device:
            problems.append(
                Problem(severity="incorrect", message=f"output {index} is on {output.device}, expected {self.device}")
            )
        if output.layout != torch.strided:
            problems.append(
                Problem(
                    severity="incorrect",
                    message=f"output {index} has layout {output.layout}, expected a strided tensor",
                )
            )
        return problems

    def _settle(self, wait_seconds: float, returned_at: float) -> None:
        """Waits until ``wait_seconds`` have passed since forward returned (at ``returned_at``)
        and the device is idle: the profiler's bookkeeping and the checks since the return
        count toward the wait, which they used to lengthen (on a GPU, half a second per
        evaluation)."""
        self._device_sync()
        self._sleep(max(0.0, wait_seconds - (self._perf_counter() - returned_at)))
        self._device_sync()

    def compile_check(self, _command: Any) -> Any:
        requests = self.recorder.compile_requests()
        assert self.language is not None and self.kernel_code is not None, "compile checks run on CPU only"
        return CompileResult(kernels=compile_requests(requests, self.language, self.kernel_code)), b"", []

    def time_trial(self, command: Any) -> Any:
        spec = command.spec
        model = self._model(spec)
        inputs = [self.runner.inputs(spec.call(index)) for index in range(command.calls)]
        if command.graph:
            if self._graph is None or len(self._graph.inputs) != command.calls:
                raise CandidateFailed("internal", "no captured graph for this trial")
            self._graph.refill(inputs)
            run = self._graph.replay
        else:

            def run() -> list[Any]:
                return [self._forward(model, x, spec) for x in inputs]

        self.recorder.take()
        self.streams.take()
        trial = self.clock.time(
            run, command.calls, lambda: self.recorder.streams() | self.streams.take(), graph=command.graph
        )
        self._timed_outputs = trial.outputs
        return (
            TrialResult(
                stream_us=trial.stream_us,
                late_us=trial.late_us,
                reruns=trial.reruns,
                launches=self.recorder.take(),
                tampered=self.watch.changed(),
            ),
            b"",
            [],
        )

    def capture_graph(self, command: Any) -> Any:
        """Captures ``calls`` forward calls as one CUDA graph for the timed trials; a
        failure is reported, not raised (the judge then times both models eagerly)."""
        spec = command.spec
        model = self._model(spec)
        inputs = [self.runner.inputs(spec.call(index)) for index in range(command.calls)]
        self._graph = None
        self.recorder.take()
        try:
            self._graph = GraphedCalls(lambda x: self._forward(model, x, spec), inputs, self.device)
            error = ""
        except Exception as failure:  # noqa: BLE001 - uncapturable code is timed eagerly
            error = describe_exception(failure, self.own_file).splitlines()[0][:1000]
        launches = self.recorder.take()
        outside = launched_outside_capture(launches)
        if outside and not error:
            self._graph = None
            error = (
                f"{outside} launch(es) of its own kernels ran outside the capture (from another thread or on a "
                "stream not being captured), so a replay would not repeat them"
            )
        return GraphCaptured(error=error, launches=launches), b"", []

    def sample(self, command: Any) -> Any:
        calls = self._timed_outputs
        flags = superseded(calls)
        starts = [sum(len(c) for c in calls[:index]) for index in range(len(calls))]
        samples, skipped, position = [], [], 0
        for index in command.calls:
            if index >= len(calls):
                raise CandidateFailed("internal", f"no timed call {index} to sample")
            for offset, value in enumerate(sample_values(calls[index], command.seed)):
                if flags[starts[index] + offset]:
                    skipped.append(position)
                else:
                    samples.append(value)
                position += 1
        metas, payload, _, _ = pack_tensors(samples)
        return SampleResult(samples=metas, superseded=skipped), payload, []

    # Loop -------------------------------------------------------------------------------

    def _failure(self, kind: ErrorKind, message: str) -> Failure:
        """A failed command's reply: a hack when the candidate was refused introspection (its
        failure is most likely that refusal, and the attempt is the finding either way)."""
        findings = self.introspection.take_findings()
        if findings:
            return Failure(error="hack", message="; ".join(findings))
        return Failure(error=kind, message=message)

    def serve(self) -> None:
        handlers = {
            "load": self.load,
            "run": self.run,
            "compile_check": self.compile_check,
            "time_trial": self.time_trial,
            "capture_graph": self.capture_graph,
            "sample": self.sample,
        }
        while True:
            command, _ = receive(self.sock, COMMAND, max_payload_bytes=0)
            for exported in self._shared:
                exported.release()
            self._shared = []
            if isinstance(command, Shutdown):
                return
            if command.kind != "sample":
                self._timed_outputs = []
            fds: list[int] = []
            try:
                reply, payload, fds = handlers[command.kind](command)
            except CandidateFailed as error:
                reply, payload = self._failure(error.kind, str(error)), b""
            except Exception as error:  # noqa: BLE001 - report, then keep serving
                reply, payload = self._failure("runtime", describe_exception(error, self.own_file)), b""
            if command.kind == "run":
                self.release_cached_memory()
            send(self.sock, reply, payload, fds)

    def release_cached_memory(self) -> None:
        """Gives the device back what the allocator keeps cached but unused after a checked
        call, when that is much: the judge plans each call against the device's free memory,
        which a candidate's cache hides (after full-size KernelBench calls of several sizes it
        held tens of GiB, and the judge's next copies ran out of memory). Not after timed
        trials, which reuse one size's blocks."""
        if self._cached_bytes() > _CACHED_LIMIT_BYTES:
            self._empty_cache()


def launched_outside_capture(launches: Sequence[LaunchRecord]) -> int:
    """How many launches of the candidate's own kernels, made while forward was captured as a
    CUDA graph, ran as ordinary launches instead of being recorded into it: a thread's launches
    go to that thread's stream, which is not being captured, and run at once (the graph then
    holds none of their work). Launches the recorder cannot place (``direct``) are not counted."""
    return sum(1 for launch in launches if launch.own and launch.unwatched is None)


def _range_findings(ranges: RangeCounts, opened: int, interpreted: bool) -> list[str]:
    """Findings for profiler ranges forward named like the judge's in a profiled call: more
    ``JUDGE_RANGE`` ranges than ``quiet`` opened, or, where launches are interpreted (CPU), more
    launch ranges than launches ran. Work inside either is left out of the CPU model's charge
    (the interpreter's copy-back, in a launch's range)."""
    findings = []
    if ranges.judge > opened:
        findings.append(
            f"forward opened profiler ranges named {JUDGE_RANGE!r}, the judge's own (they would hide its "
            "PyTorch work from the profile)"
        )
    if interpreted and ranges.triton > ranges.launches:
        findings.append(
            f"forward opened profiler ranges named '{TRITON_RANGE_PREFIX}…', the prefix of the judge's own "
            "launch ranges (they would hide its PyTorch work from the profile)"
        )
    return findings


def _is_compilation_error(error: BaseException) -> bool:
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, CompilationError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def move_to_cores(cores: set[int]) -> None:
    """Moves every thread of this process to ``cores`` (threads started later inherit it).
    A warm candidate starts up on other cores than the one being judged (worker.plan_cores)."""
    try:
        threads = [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        threads = [0]
    for tid in threads:
        with contextlib.suppress(OSError):  # a thread that has ended meanwhile
            os.sched_setaffinity(tid, cores)


def use_triton_key(key: str) -> None:
    """Makes Triton take ``key`` as the hash of its installation instead of hashing its files
    and libtriton again at this process's first compile, as Triton's own compile workers do."""
    import triton.runtime.cache

    triton.runtime.cache.triton_key = lambda: key


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fd", type=int, required=True, help="Socket to the judge.")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seccomp", action="store_true")
    parser.add_argument("--l2-flush-bytes", type=int, default=0)
    parser.add_argument(
        "--warm-cuda", action="store_true", help="Create the CUDA context and start CUPTI while waiting."
    )
    parser.add_argument("--run-cpus", default="", help="Cores to move to once warm (comma-separated).")
    parser.add_argument("--triton-key", default="", help="Triton's installation hash, computed by the server.")
    args = parser.parse_args(argv)
    faulthandler.enable()
    if args.triton_key:
        use_triton_key(args.triton_key)
    sock = socket.socket(fileno=args.fd)
    # The sandbox sees only its own GPU, as device 0.
    device = torch.device("cuda", 0) if args.device.startswith("cuda") else torch.device("cpu")
    harness = Harness(sock, device, Path.cwd(), args.l2_flush_bytes)
    if args.warm_cuda:
        harness.warm_up()
    if args.run_cpus:
        move_to_cores({int(core) for core in args.run_cpus.split(",")})
    if args.seccomp:
        seccomp_policy.install()
    send(sock, Ready())
    harness.serve()
    sock.close()
    os._exit(0)
