import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RunState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUN_STATE_UNSPECIFIED: _ClassVar[RunState]
    RUN_STATE_PENDING: _ClassVar[RunState]
    RUN_STATE_RUNNING: _ClassVar[RunState]
    RUN_STATE_SUCCEEDED: _ClassVar[RunState]
    RUN_STATE_FAILED: _ClassVar[RunState]
    RUN_STATE_STOPPED: _ClassVar[RunState]
RUN_STATE_UNSPECIFIED: RunState
RUN_STATE_PENDING: RunState
RUN_STATE_RUNNING: RunState
RUN_STATE_SUCCEEDED: RunState
RUN_STATE_FAILED: RunState
RUN_STATE_STOPPED: RunState

class StartRunRequest(_message.Message):
    __slots__ = ("config_yaml", "steps", "run_id", "resume_from")
    CONFIG_YAML_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    RESUME_FROM_FIELD_NUMBER: _ClassVar[int]
    config_yaml: str
    steps: int
    run_id: str
    resume_from: str
    def __init__(self, config_yaml: _Optional[str] = ..., steps: _Optional[int] = ..., run_id: _Optional[str] = ..., resume_from: _Optional[str] = ...) -> None: ...

class StartRunResponse(_message.Message):
    __slots__ = ("run_id", "out_dir")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    OUT_DIR_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    out_dir: str
    def __init__(self, run_id: _Optional[str] = ..., out_dir: _Optional[str] = ...) -> None: ...

class GetRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class GetRunResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: Run
    def __init__(self, run: _Optional[_Union[Run, _Mapping]] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ("runs",)
    RUNS_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[Run]
    def __init__(self, runs: _Optional[_Iterable[_Union[Run, _Mapping]]] = ...) -> None: ...

class WatchRunRequest(_message.Message):
    __slots__ = ("run_id", "from_step")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_STEP_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    from_step: int
    def __init__(self, run_id: _Optional[str] = ..., from_step: _Optional[int] = ...) -> None: ...

class WatchRunResponse(_message.Message):
    __slots__ = ("metrics",)
    METRICS_FIELD_NUMBER: _ClassVar[int]
    metrics: StepMetrics
    def __init__(self, metrics: _Optional[_Union[StepMetrics, _Mapping]] = ...) -> None: ...

class StopRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class StopRunResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: Run
    def __init__(self, run: _Optional[_Union[Run, _Mapping]] = ...) -> None: ...

class ListCheckpointsRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class ListCheckpointsResponse(_message.Message):
    __slots__ = ("checkpoints",)
    CHECKPOINTS_FIELD_NUMBER: _ClassVar[int]
    checkpoints: _containers.RepeatedCompositeFieldContainer[Checkpoint]
    def __init__(self, checkpoints: _Optional[_Iterable[_Union[Checkpoint, _Mapping]]] = ...) -> None: ...

class Run(_message.Message):
    __slots__ = ("run_id", "name", "state", "steps_done", "steps_total", "latest_metrics", "error", "out_dir", "start_time", "finish_time")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STEPS_DONE_FIELD_NUMBER: _ClassVar[int]
    STEPS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    LATEST_METRICS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OUT_DIR_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    name: str
    state: RunState
    steps_done: int
    steps_total: int
    latest_metrics: StepMetrics
    error: str
    out_dir: str
    start_time: _timestamp_pb2.Timestamp
    finish_time: _timestamp_pb2.Timestamp
    def __init__(self, run_id: _Optional[str] = ..., name: _Optional[str] = ..., state: _Optional[_Union[RunState, str]] = ..., steps_done: _Optional[int] = ..., steps_total: _Optional[int] = ..., latest_metrics: _Optional[_Union[StepMetrics, _Mapping]] = ..., error: _Optional[str] = ..., out_dir: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finish_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class StepMetrics(_message.Message):
    __slots__ = ("step", "reward_mean", "correct_rate", "hacked_rate", "mrs_rejected_rate", "prs_rejected_rate", "veto_rate", "logprob_mismatch", "weights_version", "seconds_generating", "seconds_evaluating", "seconds_logprobs", "seconds_updating", "seconds_syncing", "seconds_step", "extra")
    class ExtraEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    STEP_FIELD_NUMBER: _ClassVar[int]
    REWARD_MEAN_FIELD_NUMBER: _ClassVar[int]
    CORRECT_RATE_FIELD_NUMBER: _ClassVar[int]
    HACKED_RATE_FIELD_NUMBER: _ClassVar[int]
    MRS_REJECTED_RATE_FIELD_NUMBER: _ClassVar[int]
    PRS_REJECTED_RATE_FIELD_NUMBER: _ClassVar[int]
    VETO_RATE_FIELD_NUMBER: _ClassVar[int]
    LOGPROB_MISMATCH_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_VERSION_FIELD_NUMBER: _ClassVar[int]
    SECONDS_GENERATING_FIELD_NUMBER: _ClassVar[int]
    SECONDS_EVALUATING_FIELD_NUMBER: _ClassVar[int]
    SECONDS_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    SECONDS_UPDATING_FIELD_NUMBER: _ClassVar[int]
    SECONDS_SYNCING_FIELD_NUMBER: _ClassVar[int]
    SECONDS_STEP_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    step: int
    reward_mean: float
    correct_rate: float
    hacked_rate: float
    mrs_rejected_rate: float
    prs_rejected_rate: float
    veto_rate: float
    logprob_mismatch: float
    weights_version: int
    seconds_generating: float
    seconds_evaluating: float
    seconds_logprobs: float
    seconds_updating: float
    seconds_syncing: float
    seconds_step: float
    extra: _containers.ScalarMap[str, float]
    def __init__(self, step: _Optional[int] = ..., reward_mean: _Optional[float] = ..., correct_rate: _Optional[float] = ..., hacked_rate: _Optional[float] = ..., mrs_rejected_rate: _Optional[float] = ..., prs_rejected_rate: _Optional[float] = ..., veto_rate: _Optional[float] = ..., logprob_mismatch: _Optional[float] = ..., weights_version: _Optional[int] = ..., seconds_generating: _Optional[float] = ..., seconds_evaluating: _Optional[float] = ..., seconds_logprobs: _Optional[float] = ..., seconds_updating: _Optional[float] = ..., seconds_syncing: _Optional[float] = ..., seconds_step: _Optional[float] = ..., extra: _Optional[_Mapping[str, float]] = ...) -> None: ...

class Checkpoint(_message.Message):
    __slots__ = ("step", "path", "hf_path", "size_bytes", "create_time")
    STEP_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    HF_PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    step: int
    path: str
    hf_path: str
    size_bytes: int
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, step: _Optional[int] = ..., path: _Optional[str] = ..., hf_path: _Optional[str] = ..., size_bytes: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
