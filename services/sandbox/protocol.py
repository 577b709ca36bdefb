"""Messages between the judge and a candidate's sandboxed process, and their framing.

The candidate's process is untrusted, so nothing it sends is unpickled: every message is a
length-prefixed JSON header validated by a pydantic model (unknown fields rejected, sizes
bounded) followed by an optional raw payload, such as output tensors as bytes.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from collections.abc import Callable, Sequence
from typing import Annotated, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from services.sandbox.runner import RunSpec

_PREFIX = struct.Struct("!IQ")  # header length, payload length
MAX_HEADER_BYTES = 8 * 2**20
_DISCARD_CHUNK_BYTES = 2**20

TRANSFER_DTYPES: dict[str, torch.dtype] = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64,
        torch.complex128, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
        torch.bool,
    )
}


class ProtocolError(Exception):
    """The peer sent something malformed, or hung up."""


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# Judge -> candidate -------------------------------------------------------------------


class Load(_Message):
    """Import the candidate and build ModelNew once for ``spec`` (checks its constructor)."""

    kind: Literal["load"] = "load"
    candidate_source: str
    inputs_source: str
    spec: RunSpec


class Run(_Message):
    """One checked forward call; outputs come back as the payload."""

    kind: Literal["run"] = "run"
    spec: RunSpec
    late_write_wait_seconds: float
    # overwrite what the candidate's own kernels write, right after each launch (knockout.py)
    knock_out: bool = False
    # positions of the inputs the reference itself modifies: the candidate may modify these
    # too, and then hands their final values back after its outputs
    mutable_inputs: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list, max_length=1024)


class CompileCheck(_Message):
    """Compile every Triton kernel launched so far for a GPU target (CPU mode)."""

    kind: Literal["compile_check"] = "compile_check"


class TimeTrial(_Message):
    """One timed trial: ``calls`` forward calls back to back, each on fresh inputs; with
    ``graph``, fresh inputs copied into the captured graph's and the graph replayed."""

    kind: Literal["time_trial"] = "time_trial"
    spec: RunSpec
    calls: int = Field(1, ge=1, le=1024)
    graph: bool = False


class CaptureGraph(_Message):
    """Capture ``calls`` forward calls on inputs made from ``spec`` as one CUDA graph."""

    kind: Literal["capture_graph"] = "capture_graph"
    spec: RunSpec
    calls: int = Field(ge=1, le=1024)


class Sample(_Message):
    """Values of the last timed trial's outputs at positions drawn from ``seed``, for the
    calls listed (by index within the trial)."""

    kind: Literal["sample"] = "sample"
    seed: int = Field(ge=0)
    calls: list[Annotated[int, Field(ge=0)]] = Field(max_length=1024)


class Profile(_Message):
    """Profile ``calls`` forward calls: every kernel's time and whether it is the candidate's."""

    kind: Literal["profile"] = "profile"
    spec: RunSpec
    calls: int = Field(1, ge=1, le=64)


class Shutdown(_Message):
    """Exit."""

    kind: Literal["shutdown"] = "shutdown"


Command = Annotated[
    Load | Run | CompileCheck | TimeTrial | CaptureGraph | Sample | Profile | Shutdown, Field(discriminator="kind")
]

# Candidate -> judge -------------------------------------------------------------------


class TensorMeta(_Message):
    """One output tensor: its bytes follow in the payload, in order, C-contiguous, or, when
    ``shared``, in GPU memory behind the next file descriptor sent with the message."""

    dtype: str
    shape: list[Annotated[int, Field(ge=0)]] = Field(max_length=16)
    nbytes: int = Field(ge=0)
    shared: bool = False


class LaunchRecord(_Message):
    """A Triton launch that ran to the end; ``stored_bytes`` is known for interpreted
    launches, ``stream`` (the raw CUDA stream) for compiled ones."""

    name: str = Field(max_length=512)
    own: bool
    programs: int = Field(ge=0)
    stored_bytes: int | None = Field(None, ge=0)
    stream: int | None = Field(None, ge=0)


class Ready(_Message):
    """The candidate process is up, instrumented and waiting."""

    kind: Literal["ready"] = "ready"


class Loaded(_Message):
    """The candidate module imported and ModelNew was built on the named device."""

    kind: Literal["loaded"] = "loaded"
    parameters: int
    device_name: str


class Problem(_Message):
    """Something wrong with a run besides its values: ``hack`` findings make the verdict
    VERDICT_HACKED, ``incorrect`` ones VERDICT_INCORRECT."""

    severity: Literal["hack", "incorrect"]
    message: str = Field(max_length=2000)


class RunResult(_Message):
    """What one checked forward call did."""

    kind: Literal["run_result"] = "run_result"
    outputs: list[TensorMeta] = Field(max_length=1024)
    launches: list[LaunchRecord] = Field(max_length=100_000)
    problems: list[Problem] = Field(max_length=64)
    tampered: list[str] = Field(max_length=64)
    seconds: float
    # tensors overwritten by a knocked-out call (0 otherwise)
    overwritten: int = Field(0, ge=0)
    # strides of each output as forward returned it (the payload is always contiguous)
    output_strides: list[list[int]] = Field(default_factory=list, max_length=1024)
    # positions of the mutable inputs it modified; their final values follow the outputs
    modified_inputs: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list, max_length=1024)


class KernelCompile(_Message):
    """The compile outcome of one launched kernel."""

    name: str
    ok: bool
    message: str = ""


class CompileResult(_Message):
    """Outcome of CompileCheck."""

    kind: Literal["compile_result"] = "compile_result"
    kernels: list[KernelCompile] = Field(max_length=1024)


class TrialResult(_Message):
    """One timed trial: microseconds per call on the timed stream, how long device work it
    started kept running after that (timing.py), and what ran."""

    kind: Literal["trial_result"] = "trial_result"
    stream_us: float
    late_us: float = Field(ge=0)
    launches: list[LaunchRecord] = Field(max_length=100_000)
    tampered: list[str] = Field(max_length=64)


class SampleResult(_Message):
    """The sampled values, call by call and output by output, as tensors in the payload;
    ``superseded`` lists (call-major, over the calls asked for) outputs not sampled because a
    later call of the trial returned the same buffer (timing.superseded)."""

    kind: Literal["sample_result"] = "sample_result"
    samples: list[TensorMeta] = Field(max_length=65_536)
    superseded: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list, max_length=65_536)


class GraphCaptured(_Message):
    """Outcome of CaptureGraph: ``error`` says why capture failed (eager timing then)."""

    kind: Literal["graph_captured"] = "graph_captured"
    error: str = Field("", max_length=2000)
    launches: list[LaunchRecord] = Field(max_length=100_000)


class ProfiledKernel(_Message):
    """One kernel name's launches and total time over the profiled calls."""

    name: str = Field(max_length=1024)
    launches: int = Field(ge=0)
    time_us: float = Field(ge=0)
    own: bool


class ProfileResult(_Message):
    """Outcome of Profile."""

    kind: Literal["profile_result"] = "profile_result"
    kernels: list[ProfiledKernel] = Field(max_length=10_000)


# "resources": the harness's own bookkeeping (snapshots, handing outputs over) ran out of
# memory, which is not the candidate's fault.
ErrorKind = Literal["compile", "construct", "runtime", "resources", "internal"]


class Failure(_Message):
    """The command failed because of the candidate's code (or, rarely, the harness)."""

    kind: Literal["failure"] = "failure"
    error: ErrorKind
    message: str = Field(max_length=65536)


# Server <-> judge --------------------------------------------------------------------


class Job(_Message):
    """Evaluate the EvaluateRequest in the payload; the candidate's socket comes as a file
    descriptor with this message."""

    kind: Literal["job"] = "job"


class JudgeReady(_Message):
    """The judge process is up."""

    kind: Literal["judge_ready"] = "judge_ready"
    device_name: str


class JobDone(_Message):
    """The EvaluateResponse is the payload. ``candidate_lost`` says the candidate's process
    vanished mid-evaluation (the server adds how it ended); a non-empty ``bad_task`` says the
    task itself is broken and the request should be refused; a non-empty ``not_judged`` says
    the device could not run the evaluation (its memory taken by other work), so there is no
    verdict and the request may be retried."""

    kind: Literal["job_done"] = "job_done"
    candidate_lost: bool
    bad_task: str
    not_judged: str = ""


JUDGE_COMMAND = TypeAdapter(Annotated[Job | Shutdown, Field(discriminator="kind")])
JUDGE_REPLY = TypeAdapter(Annotated[JudgeReady | JobDone, Field(discriminator="kind")])

Reply = Annotated[
    Ready | Loaded | RunResult | CompileResult | TrialResult | SampleResult | GraphCaptured | ProfileResult | Failure,
    Field(discriminator="kind"),
]
COMMAND = TypeAdapter(Command)
REPLY = TypeAdapter(Reply)


# Framing ------------------------------------------------------------------------------


def send(
    sock: socket.socket, message: BaseModel, payload: bytes | memoryview = b"", fds: Sequence[int] = ()
) -> None:
    """Writes one framed message, optionally passing file descriptors along with it."""
    header = message.model_dump_json().encode()
    head = _PREFIX.pack(len(header), len(payload)) + header
    if fds:
        sent = socket.send_fds(sock, [head], list(fds))
        sock.sendall(head[sent:])
    else:
        sock.sendall(head)
    if payload:
        sock.sendall(payload)


def _read_exactly(sock: socket.socket, size: int) -> bytearray:
    buffer = bytearray(size)
    view = memoryview(buffer)
    while view:
        received = sock.recv_into(view)
        if received == 0:
            raise ProtocolError("peer closed the connection")
        view = view[received:]
    return buffer


def receive(sock: socket.socket, adapter: TypeAdapter, max_payload_bytes: int) -> tuple[BaseModel, bytearray]:
    """Reads one framed message and validates its header; raises ProtocolError."""
    message, payload, _ = _receive(sock, adapter, max_payload_bytes, max_fds=0)
    return message, payload


def receive_with_fds(
    sock: socket.socket, adapter: TypeAdapter, max_payload_bytes: int, max_fds: int
) -> tuple[BaseModel, bytearray, list[int]]:
    """Like receive, also returning the file descriptors that came with the message."""
    return _receive(sock, adapter, max_payload_bytes, max_fds)


def _receive(
    sock: socket.socket, adapter: TypeAdapter, max_payload_bytes: int, max_fds: int
) -> tuple[BaseModel, bytearray, list[int]]:
    message, payload_size, fds = receive_header(sock, adapter, max_payload_bytes, max_fds)
    try:
        return message, read_payload(sock, payload_size), fds
    except BaseException:
        close_fds(fds)
        raise


def receive_header(
    sock: socket.socket, adapter: TypeAdapter, max_payload_bytes: int, max_fds: int
) -> tuple[BaseModel, int, list[int]]:
    """Reads one framed message up to its payload: the validated header, the size of the
    payload still to be read (read_payload) or skipped (discard_payload), and the file
    descriptors that came with it, so that a receiver can decide from the header how much
    of an untrusted payload it is willing to hold."""
    fds: list[int] = []
    try:
        if max_fds:
            data, fds, _, _ = socket.recv_fds(sock, _PREFIX.size, max_fds)
            if not data:
                raise ProtocolError("peer closed the connection")
            prefix = bytes(data) + bytes(_read_exactly(sock, _PREFIX.size - len(data)))
        else:
            prefix = bytes(_read_exactly(sock, _PREFIX.size))
        header_size, payload_size = _PREFIX.unpack(prefix)
        if header_size > MAX_HEADER_BYTES or payload_size > max_payload_bytes:
            raise ProtocolError(f"message too large ({header_size} + {payload_size} bytes)")
        header = _read_exactly(sock, header_size)
        try:
            message = adapter.validate_python(json.loads(header))
        except ValueError as error:
            raise ProtocolError(f"malformed message: {str(error)[:500]}") from error
    except BaseException:
        close_fds(fds)
        raise
    return message, payload_size, fds


def read_payload(sock: socket.socket, size: int) -> bytearray:
    """The payload announced by receive_header, in one buffer."""
    return _read_exactly(sock, size) if size else bytearray()


def discard_payload(sock: socket.socket, size: int) -> None:
    """Reads and drops a payload announced by receive_header in fixed chunks, keeping the
    conversation in step without ever holding the payload."""
    chunk = bytearray(min(size, _DISCARD_CHUNK_BYTES))
    view = memoryview(chunk)
    while size:
        received = sock.recv_into(view[: min(size, len(chunk))])
        if received == 0:
            raise ProtocolError("peer closed the connection")
        size -= received


def close_fds(fds: Sequence[int]) -> None:
    """Closes received file descriptors that will not be used."""
    for fd in fds:
        os.close(fd)


# Tensors ------------------------------------------------------------------------------


Exporter = Callable[[torch.Tensor], tuple[int, object] | None]
Importer = Callable[[int, TensorMeta, torch.dtype], torch.Tensor]


def pack_tensors(
    tensors: Sequence[torch.Tensor], exporter: Exporter | None = None
) -> tuple[list[TensorMeta], bytearray, list[int], list[object]]:
    """Metadata, inline bytes, shared descriptors and what must stay alive until the peer
    has read them. ``exporter`` may take a tensor by descriptor (returning the fd and its
    keep-alive) or decline it (None), in which case it goes inline via host memory, copied
    once, straight into the payload (the sender then holds its outputs twice, not thrice)."""
    metas, inline, fds, keep = [], [], [], []
    for tensor in tensors:
        dtype = str(tensor.dtype).removeprefix("torch.")
        nbytes = tensor.numel() * tensor.element_size()
        shared = exporter(tensor) if exporter is not None else None
        if shared is not None:
            fd, alive = shared
            fds.append(fd)
            keep.append(alive)
        elif nbytes:
            inline.append(tensor)
        metas.append(TensorMeta(dtype=dtype, shape=list(tensor.shape), nbytes=nbytes, shared=shared is not None))
    payload = bytearray(sum(t.numel() * t.element_size() for t in inline))
    offset = 0
    for tensor in inline:
        nbytes = tensor.numel() * tensor.element_size()
        target = torch.frombuffer(payload, dtype=torch.uint8, count=nbytes, offset=offset)
        target.copy_(tensor.detach().contiguous().reshape(-1).view(torch.uint8))
        offset += nbytes
    return metas, payload, fds, keep


def unpack_tensors(
    metas: Sequence[TensorMeta], payload: bytearray, fds: Sequence[int] = (), importer: Importer | None = None
) -> list[torch.Tensor]:
    """Rebuilds tensors from untrusted metadata, bytes and descriptors, checking every size.
    Every descriptor is consumed (imported or closed), whatever happens."""
    pending = list(fds)
    view = memoryview(payload)
    try:
        tensors, offset = [], 0
        for meta in metas:
            dtype = TRANSFER_DTYPES.get(meta.dtype)
            if dtype is None:
                raise ProtocolError(f"unsupported output dtype {meta.dtype}")
            numel = 1
            for dim in meta.shape:
                numel *= dim
            itemsize = torch.empty((), dtype=dtype).element_size()
            if numel * itemsize != meta.nbytes:
                raise ProtocolError("output sizes do not add up")
            if meta.shared:
                if not pending or importer is None:
                    raise ProtocolError("a shared output came without its descriptor")
                try:
                    tensors.append(importer(pending.pop(0), meta, dtype))
                except RuntimeError as error:
                    raise ProtocolError(f"shared output could not be imported: {error}") from error
                continue
            if offset + meta.nbytes > len(payload):
                raise ProtocolError("output sizes do not add up")
            # a view, so that the payload is held once; copied only where the previous
            # outputs' sizes left it misaligned for its dtype
            flat = torch.empty(0, dtype=torch.uint8)
            if meta.nbytes:
                flat = torch.frombuffer(view[offset : offset + meta.nbytes], dtype=torch.uint8)
            if flat.data_ptr() % itemsize:
                flat = flat.clone()
            tensors.append(flat.view(dtype).reshape(meta.shape))
            offset += meta.nbytes
        if offset != len(payload):
            raise ProtocolError("payload longer than its outputs")
        if pending:
            raise ProtocolError("more descriptors than shared outputs")
        return tensors
    finally:
        close_fds(pending)
