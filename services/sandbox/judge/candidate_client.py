"""The judge's handle on a candidate's sandboxed process: typed calls over its socket."""

from __future__ import annotations

import contextlib
import math
import os
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch
from pydantic import BaseModel

from services.sandbox.wire import cuda_share
from services.sandbox.wire.framing import (
    ProtocolError,
    Shutdown,
    close_fds,
    discard_payload,
    read_payload,
    receive_header,
    send,
)
from services.sandbox.wire.judge_candidate import (
    REPLY,
    CandidateFailed,
    CaptureGraph,
    CompileCheck,
    CompileResult,
    Failure,
    GraphCaptured,
    KernelCompile,
    KnockOutOrder,
    LaunchQuery,
    Load,
    Loaded,
    Ready,
    Run,
    RunResult,
    RunSpec,
    Sample,
    SampleResult,
    TensorMeta,
    TimeTrial,
    TrialResult,
)
from services.sandbox.wire.tensors import TRANSFER_DTYPES, unpack_tensors

_MAX_SHARED = 256


class CandidateLost(Exception):
    """The candidate's process hung up, died or sent garbage."""


class CandidateHacked(Exception):
    """The candidate did what only a hack does, whatever else went wrong (a Failure of kind
    "hack"): the verdict is HACKED, in whichever stage it came."""


class JudgeOutOfMemory(Exception):
    """The judge's own copy of an output did not fit in device memory (not the candidate's fault)."""


@dataclass(frozen=True)
class CandidateRun:
    """Outputs of one checked forward call and what the harness observed. Outputs that could
    not match what was expected arrive as meta tensors (shape and dtype, no values: their bytes
    were never held), for compare_outputs to reject by their shape, dtype or count."""

    outputs: list[torch.Tensor]
    result: RunResult
    # the kernels the harness asked about during the call (whether to knock them out)
    asked: frozenset[str] = frozenset()


class CandidateClient:
    """Calls into the candidate's process; every reply is validated before use, and a reply's
    payload is held only when it is no larger than what the caller expects."""

    def __init__(
        self,
        sock: socket.socket,
        max_output_bytes: int,
        device: torch.device,
        end_sandbox: Callable[[], None],
        started: Callable[[], None],
    ) -> None:
        self._sock = sock
        self._end_sandbox = end_sandbox
        self._started = started
        self._max_output_bytes = max_output_bytes
        self._device = device

    def _call(
        self,
        command: BaseModel | None,
        expected: type[BaseModel],
        knock_out: Callable[[str], KnockOutOrder] | None = None,
    ) -> tuple[BaseModel, int, list[int]]:
        """Sends ``command`` and reads the reply's header: the reply, its payload's size (still
        unread) and its descriptors (only a RunResult may bring any). With ``knock_out`` (a
        checked call), each LaunchQuery on the way is answered with what it says."""
        try:
            if command is not None:
                send(self._sock, command)
            while True:
                reply, size, fds = receive_header(self._sock, REPLY, self._max_output_bytes, _MAX_SHARED)
                if not isinstance(reply, LaunchQuery) or knock_out is None:
                    break
                close_fds(fds)
                discard_payload(self._sock, size)
                send(self._sock, knock_out(reply.kernel))
        except (ProtocolError, OSError) as error:
            raise CandidateLost(str(error)) from error
        if not isinstance(reply, RunResult) or expected is not RunResult:
            close_fds(fds)
            fds = []
        if isinstance(reply, Failure):
            self._discard(size)
            if reply.error == "hack":
                raise CandidateHacked(reply.message)
            raise CandidateFailed(reply.error, reply.message)
        if not isinstance(reply, expected):
            raise CandidateLost(f"expected {expected.__name__}, got {type(reply).__name__}")
        return reply, size, fds

    def _discard(self, size: int) -> None:
        try:
            discard_payload(self._sock, size)
        except (ProtocolError, OSError) as error:
            raise CandidateLost(str(error)) from error

    def _tensors(
        self,
        metas: Sequence[TensorMeta],
        size: int,
        fds: list[int],
        expected: Sequence[torch.Tensor] | None,
        expected_dtypes: Sequence[torch.dtype],
    ) -> list[torch.Tensor]:
        """The tensors a reply announces, read only when they can match ``expected`` (if given,
        in ``expected_dtypes``), so that the judge never holds a payload larger than what it
        expects: a mismatch is answered with meta tensors after the payload is dropped unread
        in fixed chunks (the conversation stays in step, so the funnel may go on calling); a
        payload larger than matching tensors fill is a protocol violation, refused unread."""
        try:
            if expected is not None:
                announced = _announced(metas)
                if not _can_match(announced, expected, expected_dtypes):
                    close_fds(fds)
                    self._discard(size)
                    return announced
                bound = sum(meta.nbytes for meta in metas if not meta.shared)
                if size > bound:
                    raise ProtocolError(f"a reply of {size} payload bytes, where its tensors fill {bound}")
            payload = read_payload(self._sock, size)
        except (ProtocolError, OSError) as error:
            close_fds(fds)
            raise CandidateLost(str(error)) from error
        try:
            return unpack_tensors(metas, payload, fds, self._import)
        except ProtocolError as error:
            raise CandidateLost(str(error)) from error

    def _import(self, fd: int, meta: TensorMeta, dtype: torch.dtype) -> torch.Tensor:
        if self._device.type != "cuda":
            os.close(fd)
            raise RuntimeError("shared GPU outputs on a CPU evaluation")
        try:
            return cuda_share.import_tensor(fd, meta.nbytes, dtype, meta.shape, self._device)
        except RuntimeError as error:
            if isinstance(error, torch.OutOfMemoryError) or "OUT_OF_MEMORY" in str(error):
                raise JudgeOutOfMemory(f"the judge could not copy a {meta.nbytes} byte output: {error}") from error
            raise

    def ready(self) -> None:
        """Waits for the process to finish starting, then says so (the server's time limit for
        the candidate runs from then)."""
        _, size, _ = self._call(None, Ready)
        self._discard(size)
        self._started()

    def load(
        self,
        candidate_source: str,
        inputs_source: str,
        spec: RunSpec,
        meanwhile: Callable[[], None] = lambda: None,
        *,
        profile: bool = False,
    ) -> Loaded:
        """Imports the candidate and builds ModelNew (parameter count and device name back).
        ``meanwhile`` runs while the candidate's process imports and compiles (the judge
        computes the reference then); its exception is raised once the reply is in. With
        ``profile`` every checked call of the evaluation is profiled."""
        try:
            send(
                self._sock,
                Load(candidate_source=candidate_source, inputs_source=inputs_source, spec=spec, profile=profile),
            )
        except OSError as error:
            raise CandidateLost(str(error)) from error
        failure: BaseException | None = None
        try:
            meanwhile()
        except BaseException as error:  # noqa: BLE001 - raised after the reply, keeping the socket in step
            failure = error
        reply, size, _ = self._call(None, Loaded)
        self._discard(size)
        if failure is not None:
            raise failure
        assert isinstance(reply, Loaded)
        return reply

    def run(
        self,
        spec: RunSpec,
        late_write_wait_seconds: float,
        *,
        knock_out: Callable[[str], bool] = lambda _kernel: False,
        zeros: bool = False,
        expected: Sequence[torch.Tensor] | None = None,
        expected_dtypes: Sequence[torch.dtype] | None = None,
        mutable_inputs: Mapping[int, torch.Tensor] | None = None,
    ) -> CandidateRun:
        """One checked forward call; ``knock_out(kernel)`` says whether what that kernel writes
        is replaced during it (candidate/work.py; asked after the kernel's first launch), by
        zeros with ``zeros``, else by other values.

        ``mutable_inputs`` maps the positions of the inputs the candidate may modify to the
        values the reference leaves in them; those it modified come back after its outputs.
        ``expected`` (the reference outputs of this call; ``expected_dtypes`` where the
        candidate must return other dtypes than theirs) bounds what the judge holds of the
        reply to the bytes of those outputs and inputs: a reply whose count, shapes or dtypes
        cannot match comes back as meta tensors (for compare_outputs to reject), never read."""
        mutable = mutable_inputs or {}
        command = Run(spec=spec, late_write_wait_seconds=late_write_wait_seconds, mutable_inputs=sorted(mutable))
        asked: set[str] = set()

        def order(kernel: str) -> KnockOutOrder:
            asked.add(kernel)
            return KnockOutOrder(knock_out=knock_out(kernel), zeros=zeros)

        reply, size, fds = self._call(command, RunResult, order)
        assert isinstance(reply, RunResult)
        if not set(reply.modified_inputs) <= set(mutable) or len(set(reply.modified_inputs)) < len(
            reply.modified_inputs
        ):
            close_fds(fds)
            raise CandidateLost(f"it reports modifying inputs {reply.modified_inputs}, not among those allowed")
        wanted = dtypes = None
        if expected is not None:
            handed = [mutable[i] for i in reply.modified_inputs]
            wanted = [*expected, *handed]
            dtypes = [*(expected_dtypes or (t.dtype for t in expected)), *(t.dtype for t in handed)]
            if reply.output_strides and len(reply.output_strides) != len(expected):
                wanted = []  # told apart from outputs by count: a different count cannot match
        return CandidateRun(self._tensors(reply.outputs, size, fds, wanted, dtypes or []), reply, frozenset(asked))

    def compile_check(self) -> list[KernelCompile]:
        """Compiles every kernel launched so far for the GPU target (CPU mode)."""
        reply, size, _ = self._call(CompileCheck(), CompileResult)
        self._discard(size)
        assert isinstance(reply, CompileResult)
        return reply.kernels

    def time_trial(self, spec: RunSpec, calls: int, *, graph: bool = False) -> TrialResult:
        """One timed trial of ``calls`` forward calls on fresh inputs (with ``graph``, replaying
        the captured CUDA graph)."""
        reply, size, _ = self._call(TimeTrial(spec=spec, calls=calls, graph=graph), TrialResult)
        self._discard(size)
        assert isinstance(reply, TrialResult)
        return reply

    def capture_graph(self, spec: RunSpec, calls: int) -> GraphCaptured:
        """Captures ``calls`` forward calls as one CUDA graph for timing."""
        reply, size, _ = self._call(CaptureGraph(spec=spec, calls=calls), GraphCaptured)
        self._discard(size)
        assert isinstance(reply, GraphCaptured)
        return reply

    def sample(self, seed: int, calls: Sequence[int]) -> tuple[list[torch.Tensor], set[int]]:
        """The last timed trial's outputs at positions drawn from ``seed`` (on the host), and
        the (call-major) outputs left out because a later call returned the same buffer."""
        reply, size, _ = self._call(Sample(seed=seed, calls=list(calls)), SampleResult)
        assert isinstance(reply, SampleResult)
        return self._tensors(reply.samples, size, [], None, []), set(reply.superseded)

    def close(self) -> None:
        """Asks the process to exit and hangs up (the server kills it regardless)."""
        if self._sock.fileno() < 0:
            return
        with contextlib.suppress(OSError):
            send(self._sock, Shutdown())
        self._sock.close()

    def end(self) -> None:
        """Hangs up and has the candidate's whole sandbox killed, waiting until it is: nothing
        it started (a thread, a process it spawned, a socket it kept) is left on the device."""
        self.close()
        self._end_sandbox()


def _announced(metas: Sequence[TensorMeta]) -> list[torch.Tensor]:
    """What a reply says its tensors are, as meta tensors (no memory); ProtocolError for a
    dtype that cannot travel or sizes that do not add up."""
    tensors = []
    for meta in metas:
        dtype = TRANSFER_DTYPES.get(meta.dtype)
        if dtype is None:
            raise ProtocolError(f"unsupported output dtype {meta.dtype}")
        if math.prod(meta.shape) * dtype.itemsize != meta.nbytes:
            raise ProtocolError("output sizes do not add up")
        try:
            tensors.append(torch.empty(meta.shape, dtype=dtype, device="meta"))
        except (RuntimeError, TypeError) as error:
            raise ProtocolError(f"impossible output shape {meta.shape}") from error
    return tensors


def _can_match(
    announced: Sequence[torch.Tensor], expected: Sequence[torch.Tensor], dtypes: Sequence[torch.dtype]
) -> bool:
    return len(announced) == len(expected) and all(
        got.shape == want.shape and got.dtype == dtype
        for got, want, dtype in zip(announced, expected, dtypes, strict=False)
    )
