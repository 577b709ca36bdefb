"""Handing GPU tensors from the candidate's process to the judge without copying them
through host memory.

The two processes live in different PID namespaces, where CUDA's legacy IPC handles do not
work. Instead the candidate copies each large output into memory it allocates with the CUDA
virtual memory API as exportable to a POSIX file descriptor, and passes the descriptor over
the socket (SCM_RIGHTS). The judge imports it, maps it, clones it into its own memory and
unmaps it at once: the candidate cannot reach the judge's memory, and a descriptor that is
not what it claims to be fails the import. Needs ``cuda-bindings`` (present on CUDA images);
without it outputs travel as bytes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

# Outputs at least this large go by descriptor; smaller ones inline as bytes.
MIN_SHARED_BYTES = 1 << 20


def available() -> bool:
    """True when the CUDA driver bindings can be imported."""
    try:
        from cuda.bindings import driver  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


def _call(result: Any) -> Any:
    from cuda.bindings import driver

    error, *values = result if isinstance(result, tuple) else (result,)
    if error != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver call failed: {error}")
    return values[0] if len(values) == 1 else values


class _CudaArray:
    """A raw device allocation presented to torch as a byte array."""

    def __init__(self, pointer: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (pointer, False),
            "version": 3,
            "strides": None,
        }


def _properties(device_index: int) -> Any:
    from cuda.bindings import driver

    prop = driver.CUmemAllocationProp()
    prop.type = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = device_index
    prop.requestedHandleTypes = driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    return prop


def _mapped(handle: Any, size: int, device_index: int) -> int:
    from cuda.bindings import driver

    pointer = _call(driver.cuMemAddressReserve(size, 0, 0, 0))
    _call(driver.cuMemMap(pointer, size, 0, handle, 0))
    access = driver.CUmemAccessDesc()
    access.location = _properties(device_index).location
    access.flags = driver.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    _call(driver.cuMemSetAccess(pointer, size, [access], 1))
    return int(pointer)


def _padded(nbytes: int, device_index: int) -> int:
    from cuda.bindings import driver

    granularity = _call(
        driver.cuMemGetAllocationGranularity(
            _properties(device_index), driver.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM
        )
    )
    return int(max(granularity, -(-nbytes // granularity) * granularity))


@dataclass
class Exported:
    """A tensor copied into exportable memory; keep it alive until the judge has cloned it."""

    fd: int
    size: int
    pointer: int
    handle: Any

    def release(self) -> None:
        from cuda.bindings import driver

        os.close(self.fd)
        _call(driver.cuMemUnmap(self.pointer, self.size))
        _call(driver.cuMemAddressFree(self.pointer, self.size))
        _call(driver.cuMemRelease(self.handle))


def export(tensor: torch.Tensor) -> Exported:
    """Copies a CUDA tensor into exportable memory and returns its descriptor."""
    from cuda.bindings import driver

    device_index = tensor.device.index or 0
    source = tensor.detach().contiguous().reshape(-1).view(torch.uint8)
    size = _padded(source.numel(), device_index)
    handle = _call(driver.cuMemCreate(size, _properties(device_index), 0))
    pointer = _mapped(handle, size, device_index)
    target = torch.as_tensor(_CudaArray(pointer, source.numel()), device=tensor.device)
    target.copy_(source)
    torch.cuda.synchronize(tensor.device)
    fd = _call(
        driver.cuMemExportToShareableHandle(
            handle, driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0
        )
    )
    return Exported(int(fd), size, pointer, handle)


def import_tensor(fd: int, nbytes: int, dtype: torch.dtype, shape: Sequence[int], device: torch.device) -> torch.Tensor:
    """Maps another process's exported memory, clones it into a tensor of ours and unmaps it.
    Raises RuntimeError if the descriptor is not exported CUDA memory of at least ``nbytes``."""
    from cuda.bindings import driver

    device_index = device.index or 0
    size = _padded(nbytes, device_index)
    try:
        handle = _call(
            driver.cuMemImportFromShareableHandle(
                fd, driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
            )
        )
    finally:
        os.close(fd)
    try:
        pointer = _mapped(handle, size, device_index)
        try:
            view = torch.as_tensor(_CudaArray(pointer, nbytes), device=device)
            copy = view.clone()
            torch.cuda.synchronize(device)
        finally:
            _call(driver.cuMemUnmap(pointer, size))
            _call(driver.cuMemAddressFree(pointer, size))
    finally:
        _call(driver.cuMemRelease(handle))
    return copy.view(dtype).reshape(shape)
