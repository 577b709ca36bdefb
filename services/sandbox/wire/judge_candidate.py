"""Messages between the judge and a candidate's sandboxed process (no torch).

The candidate's process is untrusted: its replies are validated on receipt (wire/framing.py)
and bounded in size; output tensors follow a reply as its payload (wire/tensors.py) or, on a
GPU, as file descriptors (wire/cuda_share.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, TypeAdapter

from services.sandbox.wire.framing import Message, Shutdown


@dataclass(frozen=True)
class RunSpec:
    """Everything that decides one forward call. Equal specs give equal weights and inputs."""

    constants: tuple[tuple[str, int], ...] = ()
    weight_seed: int = 0
    input_seed: int = 0
    scale: float = 1.0
    dtype: str | None = None
    round_to: str | None = None
    train: bool = False
    grad: bool = False
    # build the model with the device as the default device (its weights drawn there), not on
    # the host and then moved: the judge asks for it where host initialisation is slow
    init_on_device: bool = False

    @property
    def model_key(self) -> tuple[object, ...]:
        return (self.constants, self.weight_seed, self.dtype, self.round_to, self.init_on_device)

    def call(self, index: int) -> RunSpec:
        """The spec of the index-th forward call of a timed trial: fresh inputs for each."""
        return dataclasses.replace(self, input_seed=self.input_seed + 1_000_003 * index)


# Judge -> candidate -------------------------------------------------------------------


class Load(Message):
    """Import the candidate and build ModelNew once for ``spec`` (checks its constructor);
    with ``profile``, every checked forward call of this evaluation runs under the profiler."""

    kind: Literal["load"] = "load"
    candidate_source: str
    inputs_source: str
    spec: RunSpec
    profile: bool = False


class Run(Message):
    """One checked forward call; outputs come back as the payload. Whether the call is a
    knock-out call is not said here: the harness asks (LaunchQuery) at the first launch of
    each of the candidate's own kernels, so nothing in the candidate's process can tell
    before its kernel ran (candidate/work.py)."""

    kind: Literal["run"] = "run"
    spec: RunSpec
    late_write_wait_seconds: float
    # positions of the inputs the reference itself modifies: the candidate may modify these
    # too, and then hands their final values back after its outputs
    mutable_inputs: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list, max_length=1024)


class CompileCheck(Message):
    """Compile every Triton kernel launched so far for a GPU target (CPU mode)."""

    kind: Literal["compile_check"] = "compile_check"


class TimeTrial(Message):
    """One timed trial: ``calls`` forward calls back to back, each on fresh inputs; with
    ``graph``, fresh inputs copied into the captured graph's and the graph replayed."""

    kind: Literal["time_trial"] = "time_trial"
    spec: RunSpec
    calls: int = Field(1, ge=1, le=1024)
    graph: bool = False


class CaptureGraph(Message):
    """Capture ``calls`` forward calls on inputs made from ``spec`` as one CUDA graph."""

    kind: Literal["capture_graph"] = "capture_graph"
    spec: RunSpec
    calls: int = Field(ge=1, le=1024)


class Sample(Message):
    """Values of the last timed trial's outputs at positions drawn from ``seed``, for the
    calls listed (by index within the trial)."""

    kind: Literal["sample"] = "sample"
    seed: int = Field(ge=0)
    calls: list[Annotated[int, Field(ge=0)]] = Field(max_length=1024)


class KnockOutOrder(Message):
    """The judge's answer to a LaunchQuery: whether to replace what this kernel writes during
    the current call (candidate/work.py), and with what."""

    kind: Literal["knock_out_order"] = "knock_out_order"
    knock_out: bool
    # zeros rather than other values: structure the kernels' results were made to keep (equal
    # twins, rows of one value, rows summing to 0) survives zeros, and shows what cancels out
    zeros: bool = False


Command = Annotated[
    Load | Run | CompileCheck | TimeTrial | CaptureGraph | Sample | Shutdown, Field(discriminator="kind")
]
ORDER = TypeAdapter(KnockOutOrder)

# Candidate -> judge -------------------------------------------------------------------


class TensorMeta(Message):
    """One output tensor: its bytes follow in the payload, in order, C-contiguous, or, when
    ``shared``, in GPU memory behind the next file descriptor sent with the message."""

    dtype: str
    shape: list[Annotated[int, Field(ge=0)]] = Field(max_length=16)
    nbytes: int = Field(ge=0)
    shared: bool = False


# What a launch of the candidate's own kernels did to the memory it was given, as the work
# probe saw it in a checked call (candidate/work.py): "data" changed it with information,
# "nothing" changed nothing, "constant" filled it with one value, "copy" made it a copy of
# another argument (cast, reshaped or reordered, or moved whole from part of it), "rescaled"
# made it another argument times a scale plus a shift. None: not seen by the probe (a timed
# call, or another path).
Wrote = Literal["data", "nothing", "constant", "copy", "rescaled"]

# Why the work probe cannot watch a launch, so that its ``wrote`` is None even in a checked
# call (candidate/launches.py): "capture" was recorded into a CUDA graph being captured (it
# ran nothing then), "replay" ran again in a replay of such a graph, "direct" was a
# CompiledKernel launched other than through JITFunction.run (the entry point the probe
# wraps). A launch without one went through the probe's entry point (or the interpreter).
Unwatched = Literal["capture", "replay", "direct"]


def _cut_to(length: int) -> BeforeValidator:
    """Cuts a string or a list to ``length``: for what the candidate's process reports in
    bounded amounts that an honest candidate may exceed (a long kernel name, many findings or
    outputs), where refusing the reply would make its verdict a RUNTIME_ERROR. Limits that
    only a broken or hostile peer exceeds stay refusals."""
    return BeforeValidator(lambda value: value[:length] if isinstance(value, (str, list)) else value)


class LaunchRecord(Message):
    """A Triton launch that ran to the end; ``stored_bytes`` is known for interpreted
    launches, ``stream`` (the raw CUDA stream) for compiled ones, ``wrote`` for own
    launches in checked calls, except those the probe cannot watch (``unwatched`` says why)."""

    name: Annotated[str, _cut_to(512)]
    own: bool
    programs: int = Field(ge=0)
    stored_bytes: int | None = Field(None, ge=0)
    stream: int | None = Field(None, ge=0)
    wrote: Wrote | None = None
    unwatched: Unwatched | None = None


class LaunchQuery(Message):
    """Sent in the middle of a checked call, right after the first launch of one of the
    candidate's own kernels: the judge answers with a KnockOutOrder."""

    kind: Literal["launch_query"] = "launch_query"
    kernel: Annotated[str, _cut_to(512)]


class ProfiledKernel(Message):
    """One kernel name's launches and total time over a profiled call."""

    # PyTorch's templated kernel names run to several thousand characters: cut, not refused
    name: Annotated[str, _cut_to(1024)]
    launches: int = Field(ge=0)
    time_us: float = Field(ge=0)
    own: bool


class PyTorchMatch(Message):
    """A tensor that a PyTorch operator computed during a checked call without any result of
    the candidate's kernels, whose values at ``positions`` (flat indices) are those of output
    ``output`` as forward returned it (candidate/trace.py); the judge confirms it against the
    reference."""

    operator: str = Field(max_length=256)
    output: int = Field(ge=0)
    positions: list[Annotated[int, Field(ge=0)]] = Field(max_length=4096)
    values: list[float] = Field(max_length=4096)
    # the values are the tensor's times a scale plus a shift (the output is that rescaled)
    rescaled: bool = False
    # a PyTorch operator made it, which the profile counts (not a tensor that entered from
    # outside PyTorch or was written out of the trace's sight)
    profiled: bool = False


class Ready(Message):
    """The candidate process is up, instrumented and waiting."""

    kind: Literal["ready"] = "ready"


class Loaded(Message):
    """The candidate module imported and ModelNew was built on the named device."""

    kind: Literal["loaded"] = "loaded"
    parameters: int
    device_name: str
    # False when the spec asked for ModelNew to be built on the device but its constructor
    # fails there (it then was built on the host): the judge builds every later model there
    init_on_device: bool = False


class Problem(Message):
    """Something wrong with a run besides its values: ``hack`` findings make the verdict
    VERDICT_HACKED, ``incorrect`` ones VERDICT_INCORRECT."""

    severity: Literal["hack", "incorrect"]
    message: Annotated[str, _cut_to(2000)]


class RunResult(Message):
    """What one checked forward call did."""

    kind: Literal["run_result"] = "run_result"
    outputs: list[TensorMeta] = Field(max_length=1024)
    launches: list[LaunchRecord] = Field(max_length=100_000)
    problems: Annotated[list[Problem], _cut_to(64)]
    tampered: Annotated[list[str], _cut_to(64)]
    seconds: float
    # tensors whose kernel-written elements a knock-out call replaced (0 otherwise)
    overwritten: int = Field(0, ge=0)
    # the call's profile (when the evaluation profiles its checked calls)
    kernels: list[ProfiledKernel] = Field(default_factory=list, max_length=10_000)
    # tensors PyTorch computed without the candidate's kernels that equal an output
    pytorch_matches: Annotated[list[PyTorchMatch], _cut_to(64)] = Field(default_factory=list)
    # what forward used that was made or written out of the trace's sight: neither by PyTorch's
    # operators nor by its kernels, nor held unchanged from before the call (candidate/trace.py)
    outside: Annotated[list[Annotated[str, _cut_to(300)]], _cut_to(8)] = Field(default_factory=list)
    # outputs that neither its kernels nor any operator of forward wrote (candidate/trace.py)
    unseen_outputs: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list, max_length=1024)
    # strides of each output as forward returned it (the payload is always contiguous)
    output_strides: list[list[int]] = Field(default_factory=list, max_length=1024)
    # positions of the mutable inputs it modified; their final values follow the outputs
    modified_inputs: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list, max_length=1024)


class KernelCompile(Message):
    """The compile outcome of one launched kernel."""

    name: str
    ok: bool
    message: str = ""


class CompileResult(Message):
    """Outcome of CompileCheck."""

    kind: Literal["compile_result"] = "compile_result"
    kernels: list[KernelCompile] = Field(max_length=1024)


class TrialResult(Message):
    """One timed trial: microseconds per call on the timed stream, how long device work it
    started kept running after that (shared/clock.py), and what ran."""

    kind: Literal["trial_result"] = "trial_result"
    stream_us: float
    late_us: float = Field(ge=0)
    reruns: int = Field(0, ge=0)  # runs again because the graph's launch outlasted the spin
    launches: list[LaunchRecord] = Field(max_length=100_000)
    tampered: Annotated[list[str], _cut_to(64)]


class SampleResult(Message):
    """The sampled values, call by call and output by output, as tensors in the payload;
    ``superseded`` lists (call-major, over the calls asked for) outputs not sampled because a
    later call of the trial returned the same buffer (timing.superseded)."""

    kind: Literal["sample_result"] = "sample_result"
    samples: list[TensorMeta] = Field(max_length=65_536)
    superseded: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list, max_length=65_536)


class GraphCaptured(Message):
    """Outcome of CaptureGraph: ``error`` says why capture failed (eager timing then)."""

    kind: Literal["graph_captured"] = "graph_captured"
    error: Annotated[str, _cut_to(2000)] = ""
    launches: list[LaunchRecord] = Field(max_length=100_000)


# "resources": the harness's own bookkeeping (snapshots, handing outputs over) ran out of
# memory, which is not the candidate's fault.
# "hack": the candidate did what only a hack does (candidate/introspection.py), whatever else failed.
ErrorKind = Literal["compile", "construct", "runtime", "resources", "internal", "hack"]


class CandidateFailed(Exception):
    """A command failed because of the candidate's code (or, rarely, the harness); ``kind``
    says at which step. Raised in the candidate's process, it travels as a Failure reply and
    is raised again in the judge."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Failure(Message):
    """The command failed because of the candidate's code (or, rarely, the harness)."""

    kind: Literal["failure"] = "failure"
    error: ErrorKind
    message: str = Field(max_length=65536)


Reply = Annotated[
    Ready | Loaded | RunResult | LaunchQuery | CompileResult | TrialResult | SampleResult | GraphCaptured | Failure,
    Field(discriminator="kind"),
]
COMMAND = TypeAdapter(Command)
REPLY = TypeAdapter(Reply)
