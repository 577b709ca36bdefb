from drkernel.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Verdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERDICT_UNSPECIFIED: _ClassVar[Verdict]
    VERDICT_CORRECT: _ClassVar[Verdict]
    VERDICT_INCORRECT: _ClassVar[Verdict]
    VERDICT_SYNTAX_ERROR: _ClassVar[Verdict]
    VERDICT_COMPILE_ERROR: _ClassVar[Verdict]
    VERDICT_RUNTIME_ERROR: _ClassVar[Verdict]
    VERDICT_TIMEOUT: _ClassVar[Verdict]
    VERDICT_HACKED: _ClassVar[Verdict]

class Stage(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STAGE_UNSPECIFIED: _ClassVar[Stage]
    STAGE_SYNTAX: _ClassVar[Stage]
    STAGE_LOAD: _ClassVar[Stage]
    STAGE_COMPILE: _ClassVar[Stage]
    STAGE_TINY_RUN: _ClassVar[Stage]
    STAGE_CORRECTNESS: _ClassVar[Stage]
    STAGE_TIMING: _ClassVar[Stage]
    STAGE_PROFILE: _ClassVar[Stage]

class StageStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STAGE_STATUS_UNSPECIFIED: _ClassVar[StageStatus]
    STAGE_STATUS_PASSED: _ClassVar[StageStatus]
    STAGE_STATUS_FAILED: _ClassVar[StageStatus]
    STAGE_STATUS_SKIPPED: _ClassVar[StageStatus]

class InputVariant(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INPUT_VARIANT_UNSPECIFIED: _ClassVar[InputVariant]
    INPUT_VARIANT_ORIGINAL: _ClassVar[InputVariant]
    INPUT_VARIANT_SEED: _ClassVar[InputVariant]
    INPUT_VARIANT_SCALED: _ClassVar[InputVariant]
    INPUT_VARIANT_RESIZED: _ClassVar[InputVariant]
    INPUT_VARIANT_DTYPE: _ClassVar[InputVariant]
    INPUT_VARIANT_TINY: _ClassVar[InputVariant]

class CorrectnessProfile(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CORRECTNESS_PROFILE_UNSPECIFIED: _ClassVar[CorrectnessProfile]
    CORRECTNESS_PROFILE_STRICT: _ClassVar[CorrectnessProfile]
    CORRECTNESS_PROFILE_KERNELGYM: _ClassVar[CorrectnessProfile]
    CORRECTNESS_PROFILE_KERNELBENCH: _ClassVar[CorrectnessProfile]
VERDICT_UNSPECIFIED: Verdict
VERDICT_CORRECT: Verdict
VERDICT_INCORRECT: Verdict
VERDICT_SYNTAX_ERROR: Verdict
VERDICT_COMPILE_ERROR: Verdict
VERDICT_RUNTIME_ERROR: Verdict
VERDICT_TIMEOUT: Verdict
VERDICT_HACKED: Verdict
STAGE_UNSPECIFIED: Stage
STAGE_SYNTAX: Stage
STAGE_LOAD: Stage
STAGE_COMPILE: Stage
STAGE_TINY_RUN: Stage
STAGE_CORRECTNESS: Stage
STAGE_TIMING: Stage
STAGE_PROFILE: Stage
STAGE_STATUS_UNSPECIFIED: StageStatus
STAGE_STATUS_PASSED: StageStatus
STAGE_STATUS_FAILED: StageStatus
STAGE_STATUS_SKIPPED: StageStatus
INPUT_VARIANT_UNSPECIFIED: InputVariant
INPUT_VARIANT_ORIGINAL: InputVariant
INPUT_VARIANT_SEED: InputVariant
INPUT_VARIANT_SCALED: InputVariant
INPUT_VARIANT_RESIZED: InputVariant
INPUT_VARIANT_DTYPE: InputVariant
INPUT_VARIANT_TINY: InputVariant
CORRECTNESS_PROFILE_UNSPECIFIED: CorrectnessProfile
CORRECTNESS_PROFILE_STRICT: CorrectnessProfile
CORRECTNESS_PROFILE_KERNELGYM: CorrectnessProfile
CORRECTNESS_PROFILE_KERNELBENCH: CorrectnessProfile

class EvaluateRequest(_message.Message):
    __slots__ = ("request_id", "reference_source", "candidate_source", "task_name", "options")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_SOURCE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_SOURCE_FIELD_NUMBER: _ClassVar[int]
    TASK_NAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    reference_source: str
    candidate_source: str
    task_name: str
    options: EvaluateOptions
    def __init__(self, request_id: _Optional[str] = ..., reference_source: _Optional[str] = ..., candidate_source: _Optional[str] = ..., task_name: _Optional[str] = ..., options: _Optional[_Union[EvaluateOptions, _Mapping]] = ...) -> None: ...

class EvaluateOptions(_message.Message):
    __slots__ = ("timeout_seconds", "device", "timing_trials", "warmup_trials", "atol", "rtol", "seed", "skip_timing", "skip_profile", "correctness_profile")
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    TIMING_TRIALS_FIELD_NUMBER: _ClassVar[int]
    WARMUP_TRIALS_FIELD_NUMBER: _ClassVar[int]
    ATOL_FIELD_NUMBER: _ClassVar[int]
    RTOL_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SKIP_TIMING_FIELD_NUMBER: _ClassVar[int]
    SKIP_PROFILE_FIELD_NUMBER: _ClassVar[int]
    CORRECTNESS_PROFILE_FIELD_NUMBER: _ClassVar[int]
    timeout_seconds: float
    device: _common_pb2.Device
    timing_trials: int
    warmup_trials: int
    atol: float
    rtol: float
    seed: int
    skip_timing: bool
    skip_profile: bool
    correctness_profile: CorrectnessProfile
    def __init__(self, timeout_seconds: _Optional[float] = ..., device: _Optional[_Union[_common_pb2.Device, str]] = ..., timing_trials: _Optional[int] = ..., warmup_trials: _Optional[int] = ..., atol: _Optional[float] = ..., rtol: _Optional[float] = ..., seed: _Optional[int] = ..., skip_timing: _Optional[bool] = ..., skip_profile: _Optional[bool] = ..., correctness_profile: _Optional[_Union[CorrectnessProfile, str]] = ...) -> None: ...

class EvaluateResponse(_message.Message):
    __slots__ = ("request_id", "verdict", "reward", "speedup", "hack_reasons", "error", "feedback", "furthest_stage", "stages", "checks", "timing", "triton_kernels", "evaluation_seconds", "queue_seconds", "device_name", "coverage", "profile", "request_error", "correctness_profile")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    SPEEDUP_FIELD_NUMBER: _ClassVar[int]
    HACK_REASONS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    FURTHEST_STAGE_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    TRITON_KERNELS_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    COVERAGE_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ERROR_FIELD_NUMBER: _ClassVar[int]
    CORRECTNESS_PROFILE_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    verdict: Verdict
    reward: float
    speedup: float
    hack_reasons: _containers.RepeatedScalarFieldContainer[str]
    error: str
    feedback: str
    furthest_stage: Stage
    stages: _containers.RepeatedCompositeFieldContainer[StageResult]
    checks: _containers.RepeatedCompositeFieldContainer[CorrectnessCheck]
    timing: TimingReport
    triton_kernels: _containers.RepeatedCompositeFieldContainer[TritonKernel]
    evaluation_seconds: float
    queue_seconds: float
    device_name: str
    coverage: float
    profile: _common_pb2.ProfileSummary
    request_error: str
    correctness_profile: CorrectnessProfile
    def __init__(self, request_id: _Optional[str] = ..., verdict: _Optional[_Union[Verdict, str]] = ..., reward: _Optional[float] = ..., speedup: _Optional[float] = ..., hack_reasons: _Optional[_Iterable[str]] = ..., error: _Optional[str] = ..., feedback: _Optional[str] = ..., furthest_stage: _Optional[_Union[Stage, str]] = ..., stages: _Optional[_Iterable[_Union[StageResult, _Mapping]]] = ..., checks: _Optional[_Iterable[_Union[CorrectnessCheck, _Mapping]]] = ..., timing: _Optional[_Union[TimingReport, _Mapping]] = ..., triton_kernels: _Optional[_Iterable[_Union[TritonKernel, _Mapping]]] = ..., evaluation_seconds: _Optional[float] = ..., queue_seconds: _Optional[float] = ..., device_name: _Optional[str] = ..., coverage: _Optional[float] = ..., profile: _Optional[_Union[_common_pb2.ProfileSummary, _Mapping]] = ..., request_error: _Optional[str] = ..., correctness_profile: _Optional[_Union[CorrectnessProfile, str]] = ...) -> None: ...

class StageResult(_message.Message):
    __slots__ = ("stage", "status", "elapsed_seconds", "detail")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    stage: Stage
    status: StageStatus
    elapsed_seconds: float
    detail: str
    def __init__(self, stage: _Optional[_Union[Stage, str]] = ..., status: _Optional[_Union[StageStatus, str]] = ..., elapsed_seconds: _Optional[float] = ..., detail: _Optional[str] = ...) -> None: ...

class CorrectnessCheck(_message.Message):
    __slots__ = ("variant", "description", "passed", "skipped", "max_abs_error", "max_rel_error", "rel_l2_error", "atol", "rtol", "message", "elapsed_seconds")
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    MAX_ABS_ERROR_FIELD_NUMBER: _ClassVar[int]
    MAX_REL_ERROR_FIELD_NUMBER: _ClassVar[int]
    REL_L2_ERROR_FIELD_NUMBER: _ClassVar[int]
    ATOL_FIELD_NUMBER: _ClassVar[int]
    RTOL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    variant: InputVariant
    description: str
    passed: bool
    skipped: bool
    max_abs_error: float
    max_rel_error: float
    rel_l2_error: float
    atol: float
    rtol: float
    message: str
    elapsed_seconds: float
    def __init__(self, variant: _Optional[_Union[InputVariant, str]] = ..., description: _Optional[str] = ..., passed: _Optional[bool] = ..., skipped: _Optional[bool] = ..., max_abs_error: _Optional[float] = ..., max_rel_error: _Optional[float] = ..., rel_l2_error: _Optional[float] = ..., atol: _Optional[float] = ..., rtol: _Optional[float] = ..., message: _Optional[str] = ..., elapsed_seconds: _Optional[float] = ...) -> None: ...

class TimingReport(_message.Message):
    __slots__ = ("valid", "invalid_reason", "reference", "candidate", "warmup_trials", "method", "calls_per_trial", "cuda_graph", "late_device_work_us")
    VALID_FIELD_NUMBER: _ClassVar[int]
    INVALID_REASON_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    WARMUP_TRIALS_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    CALLS_PER_TRIAL_FIELD_NUMBER: _ClassVar[int]
    CUDA_GRAPH_FIELD_NUMBER: _ClassVar[int]
    LATE_DEVICE_WORK_US_FIELD_NUMBER: _ClassVar[int]
    valid: bool
    invalid_reason: str
    reference: RuntimeStats
    candidate: RuntimeStats
    warmup_trials: int
    method: str
    calls_per_trial: int
    cuda_graph: bool
    late_device_work_us: float
    def __init__(self, valid: _Optional[bool] = ..., invalid_reason: _Optional[str] = ..., reference: _Optional[_Union[RuntimeStats, _Mapping]] = ..., candidate: _Optional[_Union[RuntimeStats, _Mapping]] = ..., warmup_trials: _Optional[int] = ..., method: _Optional[str] = ..., calls_per_trial: _Optional[int] = ..., cuda_graph: _Optional[bool] = ..., late_device_work_us: _Optional[float] = ...) -> None: ...

class RuntimeStats(_message.Message):
    __slots__ = ("trials", "median_us", "mean_us", "trimmed_mean_us", "min_us", "max_us", "stdev_us", "coefficient_of_variation")
    TRIALS_FIELD_NUMBER: _ClassVar[int]
    MEDIAN_US_FIELD_NUMBER: _ClassVar[int]
    MEAN_US_FIELD_NUMBER: _ClassVar[int]
    TRIMMED_MEAN_US_FIELD_NUMBER: _ClassVar[int]
    MIN_US_FIELD_NUMBER: _ClassVar[int]
    MAX_US_FIELD_NUMBER: _ClassVar[int]
    STDEV_US_FIELD_NUMBER: _ClassVar[int]
    COEFFICIENT_OF_VARIATION_FIELD_NUMBER: _ClassVar[int]
    trials: int
    median_us: float
    mean_us: float
    trimmed_mean_us: float
    min_us: float
    max_us: float
    stdev_us: float
    coefficient_of_variation: float
    def __init__(self, trials: _Optional[int] = ..., median_us: _Optional[float] = ..., mean_us: _Optional[float] = ..., trimmed_mean_us: _Optional[float] = ..., min_us: _Optional[float] = ..., max_us: _Optional[float] = ..., stdev_us: _Optional[float] = ..., coefficient_of_variation: _Optional[float] = ...) -> None: ...

class TritonKernel(_message.Message):
    __slots__ = ("name", "launches", "programs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LAUNCHES_FIELD_NUMBER: _ClassVar[int]
    PROGRAMS_FIELD_NUMBER: _ClassVar[int]
    name: str
    launches: int
    programs: int
    def __init__(self, name: _Optional[str] = ..., launches: _Optional[int] = ..., programs: _Optional[int] = ...) -> None: ...

class DescribeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DescribeResponse(_message.Message):
    __slots__ = ("version", "default_device", "workers", "queue_length", "queue_capacity", "isolation")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_DEVICE_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    QUEUE_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_FIELD_NUMBER: _ClassVar[int]
    version: str
    default_device: _common_pb2.Device
    workers: _containers.RepeatedCompositeFieldContainer[WorkerInfo]
    queue_length: int
    queue_capacity: int
    isolation: _containers.RepeatedCompositeFieldContainer[IsolationMechanism]
    def __init__(self, version: _Optional[str] = ..., default_device: _Optional[_Union[_common_pb2.Device, str]] = ..., workers: _Optional[_Iterable[_Union[WorkerInfo, _Mapping]]] = ..., queue_length: _Optional[int] = ..., queue_capacity: _Optional[int] = ..., isolation: _Optional[_Iterable[_Union[IsolationMechanism, _Mapping]]] = ...) -> None: ...

class WorkerInfo(_message.Message):
    __slots__ = ("id", "device", "device_name", "busy", "evaluations")
    ID_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    BUSY_FIELD_NUMBER: _ClassVar[int]
    EVALUATIONS_FIELD_NUMBER: _ClassVar[int]
    id: str
    device: _common_pb2.Device
    device_name: str
    busy: bool
    evaluations: int
    def __init__(self, id: _Optional[str] = ..., device: _Optional[_Union[_common_pb2.Device, str]] = ..., device_name: _Optional[str] = ..., busy: _Optional[bool] = ..., evaluations: _Optional[int] = ...) -> None: ...

class IsolationMechanism(_message.Message):
    __slots__ = ("name", "active", "detail")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    name: str
    active: bool
    detail: str
    def __init__(self, name: _Optional[str] = ..., active: _Optional[bool] = ..., detail: _Optional[str] = ...) -> None: ...
