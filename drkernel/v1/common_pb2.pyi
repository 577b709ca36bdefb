from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor

class Device(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DEVICE_UNSPECIFIED: _ClassVar[Device]
    DEVICE_CPU: _ClassVar[Device]
    DEVICE_CUDA: _ClassVar[Device]
DEVICE_UNSPECIFIED: Device
DEVICE_CPU: Device
DEVICE_CUDA: Device
