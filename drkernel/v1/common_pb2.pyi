from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Device(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DEVICE_UNSPECIFIED: _ClassVar[Device]
    DEVICE_CPU: _ClassVar[Device]
    DEVICE_CUDA: _ClassVar[Device]
DEVICE_UNSPECIFIED: Device
DEVICE_CPU: Device
DEVICE_CUDA: Device

class KernelProfile(_message.Message):
    __slots__ = ("name", "calls", "device_time_us", "mean_device_time_us", "is_candidate")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TIME_US_FIELD_NUMBER: _ClassVar[int]
    MEAN_DEVICE_TIME_US_FIELD_NUMBER: _ClassVar[int]
    IS_CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    name: str
    calls: float
    device_time_us: float
    mean_device_time_us: float
    is_candidate: bool
    def __init__(self, name: _Optional[str] = ..., calls: _Optional[float] = ..., device_time_us: _Optional[float] = ..., mean_device_time_us: _Optional[float] = ..., is_candidate: _Optional[bool] = ...) -> None: ...

class ProfileSummary(_message.Message):
    __slots__ = ("kernels", "total_device_time_us", "coverage", "reference_kernels", "reference_total_device_time_us", "method", "note")
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_DEVICE_TIME_US_FIELD_NUMBER: _ClassVar[int]
    COVERAGE_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_KERNELS_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_TOTAL_DEVICE_TIME_US_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    kernels: _containers.RepeatedCompositeFieldContainer[KernelProfile]
    total_device_time_us: float
    coverage: float
    reference_kernels: _containers.RepeatedCompositeFieldContainer[KernelProfile]
    reference_total_device_time_us: float
    method: str
    note: str
    def __init__(self, kernels: _Optional[_Iterable[_Union[KernelProfile, _Mapping]]] = ..., total_device_time_us: _Optional[float] = ..., coverage: _Optional[float] = ..., reference_kernels: _Optional[_Iterable[_Union[KernelProfile, _Mapping]]] = ..., reference_total_device_time_us: _Optional[float] = ..., method: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...
