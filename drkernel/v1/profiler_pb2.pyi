from drkernel.v1 import common_pb2 as _common_pb2
from drkernel.v1 import sandbox_pb2 as _sandbox_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProfileRequest(_message.Message):
    __slots__ = ("request_id", "reference_source", "candidate_source", "device", "timeout_seconds", "seed")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_SOURCE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_SOURCE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    reference_source: str
    candidate_source: str
    device: _common_pb2.Device
    timeout_seconds: float
    seed: int
    def __init__(self, request_id: _Optional[str] = ..., reference_source: _Optional[str] = ..., candidate_source: _Optional[str] = ..., device: _Optional[_Union[_common_pb2.Device, str]] = ..., timeout_seconds: _Optional[float] = ..., seed: _Optional[int] = ...) -> None: ...

class ProfileResponse(_message.Message):
    __slots__ = ("request_id", "verdict", "error", "kernels", "coverage", "total_device_time_us", "reference_kernels", "reference_total_device_time_us", "feedback", "device_name", "method")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    COVERAGE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_DEVICE_TIME_US_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_KERNELS_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_TOTAL_DEVICE_TIME_US_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    verdict: _sandbox_pb2.Verdict
    error: str
    kernels: _containers.RepeatedCompositeFieldContainer[_common_pb2.KernelProfile]
    coverage: float
    total_device_time_us: float
    reference_kernels: _containers.RepeatedCompositeFieldContainer[_common_pb2.KernelProfile]
    reference_total_device_time_us: float
    feedback: str
    device_name: str
    method: str
    def __init__(self, request_id: _Optional[str] = ..., verdict: _Optional[_Union[_sandbox_pb2.Verdict, str]] = ..., error: _Optional[str] = ..., kernels: _Optional[_Iterable[_Union[_common_pb2.KernelProfile, _Mapping]]] = ..., coverage: _Optional[float] = ..., total_device_time_us: _Optional[float] = ..., reference_kernels: _Optional[_Iterable[_Union[_common_pb2.KernelProfile, _Mapping]]] = ..., reference_total_device_time_us: _Optional[float] = ..., feedback: _Optional[str] = ..., device_name: _Optional[str] = ..., method: _Optional[str] = ...) -> None: ...
