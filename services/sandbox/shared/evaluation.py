"""One evaluation as the sandbox's processes see it: the request and what the judge concluded.

Typed and free of protos (the servicer translates at the edge) and of torch (the server
imports it). The enums carry sandbox.proto's numbers, so the edge maps them one to one. Both
types cross from the server to the judge and back as JSON (wire/server_judge.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from pydantic import ConfigDict

from services.profiler.summary import ProfileSummary

# Error measures may be infinite or NaN; JSON carries them as its constants.
_WIRE = ConfigDict(ser_json_inf_nan="constants", extra="forbid")


class Verdict(IntEnum):
    """What the candidate is, all things judged."""

    UNSPECIFIED = 0
    CORRECT = 1
    INCORRECT = 2
    SYNTAX_ERROR = 3
    COMPILE_ERROR = 4
    RUNTIME_ERROR = 5
    TIMEOUT = 6
    HACKED = 7


class Stage(IntEnum):
    """The funnel's stages, in the order they run."""

    UNSPECIFIED = 0
    SYNTAX = 1
    LOAD = 2
    COMPILE = 3
    TINY_RUN = 4
    CORRECTNESS = 5
    TIMING = 6
    PROFILE = 7


class StageStatus(IntEnum):
    """How a stage ended: decided by the stage itself, never read from its detail text."""

    UNSPECIFIED = 0
    PASSED = 1
    FAILED = 2
    SKIPPED = 3


class InputVariant(IntEnum):
    """Which inputs a correctness check used."""

    UNSPECIFIED = 0
    ORIGINAL = 1
    SEED = 2
    SCALED = 3
    RESIZED = 4
    DTYPE = 5
    TINY = 6


class CorrectnessProfile(IntEnum):
    """Which published harness's correctness checks to apply (judge/correctness_profiles.py)."""

    UNSPECIFIED = 0
    STRICT = 1
    KERNELGYM = 2
    KERNELBENCH = 3


class Device(IntEnum):
    """Where kernels run (common.proto's Device)."""

    UNSPECIFIED = 0
    CPU = 1
    CUDA = 2


@dataclass(frozen=True)
class EvaluationOptions:
    """How to judge (zeros and UNSPECIFIED take the server's settings)."""

    timeout_seconds: float = 0.0
    device: Device = Device.UNSPECIFIED
    timing_trials: int = 0
    warmup_trials: int = 0
    atol: float = 0.0
    rtol: float = 0.0
    seed: int | None = None
    skip_timing: bool = False
    skip_profile: bool = False
    correctness_profile: CorrectnessProfile = CorrectnessProfile.UNSPECIFIED


@dataclass(frozen=True)
class EvaluationRequest:
    """One candidate to judge against one task."""

    __pydantic_config__ = _WIRE

    request_id: str
    reference_source: str
    candidate_source: str
    options: EvaluationOptions = field(default_factory=EvaluationOptions)


@dataclass(frozen=True)
class StageResult:
    """How one stage of the funnel ended."""

    stage: Stage
    status: StageStatus
    elapsed_seconds: float = 0.0
    detail: str = ""


@dataclass(frozen=True)
class CorrectnessCheck:
    """One input variant compared with the reference (or skipped, with the reason)."""

    variant: InputVariant
    description: str
    passed: bool = False
    skipped: bool = False
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    rel_l2_error: float = 0.0
    atol: float = 0.0
    rtol: float = 0.0
    message: str = ""
    elapsed_seconds: float = 0.0


@dataclass(frozen=True)
class RuntimeStats:
    """Robust statistics of timed trials, in microseconds per call."""

    trials: int = 0
    median_us: float = 0.0
    mean_us: float = 0.0
    trimmed_mean_us: float = 0.0
    min_us: float = 0.0
    max_us: float = 0.0
    stdev_us: float = 0.0
    coefficient_of_variation: float = 0.0


@dataclass(frozen=True)
class TimingReport:
    """What the timing stage measured, and whether it yields a speedup."""

    valid: bool = False
    invalid_reason: str = ""
    reference: RuntimeStats | None = None
    candidate: RuntimeStats | None = None
    warmup_trials: int = 0
    method: str = ""
    calls_per_trial: int = 0
    cuda_graph: bool = False
    late_device_work_us: float = 0.0


@dataclass(frozen=True)
class TritonKernel:
    """One of the candidate's own kernels that did work: judged launches and their programs."""

    name: str
    launches: int
    programs: int


@dataclass(frozen=True)
class Judgement:
    """What the judge concluded. ``hack_evidence`` is every finding collected, reported only
    under a HACKED verdict; ``candidate_lost`` says the candidate's process vanished. The final
    verdict, reward and feedback are settled once, by server/verdict.py's ``combine``, which
    also knows how the candidate's process ended."""

    __pydantic_config__ = _WIRE

    request_id: str
    verdict: Verdict = Verdict.UNSPECIFIED
    error: str = ""
    hack_evidence: tuple[str, ...] = ()
    stages: tuple[StageResult, ...] = ()
    furthest_stage: Stage = Stage.UNSPECIFIED
    checks: tuple[CorrectnessCheck, ...] = ()
    timing: TimingReport | None = None
    speedup: float = 0.0
    profile: ProfileSummary | None = None
    coverage: float = 0.0
    triton_kernels: tuple[TritonKernel, ...] = ()
    device_name: str = ""
    correctness_profile: CorrectnessProfile = CorrectnessProfile.UNSPECIFIED
    candidate_lost: bool = False
