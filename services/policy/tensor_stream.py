"""Reassembles tensors that a trainer streams in chunks (UpdateWeights), checking every chunk
against the manifest sent first, so a short, overlong or out-of-order stream is refused with a
clear message instead of loading garbage."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from drkernel.errors import InvalidArgument

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


@dataclass(frozen=True)
class TensorSpec:
    """One tensor announced in the manifest."""

    name: str
    dtype: str  # a key of DTYPES
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPES[self.dtype].itemsize


class TensorAssembler:
    """Collects the chunks of the tensors of one manifest."""

    def __init__(self, specs: Sequence[TensorSpec], max_total_bytes: int) -> None:
        if not specs:
            raise InvalidArgument("the tensor manifest is empty")
        names = [spec.name for spec in specs]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise InvalidArgument(f"tensor names repeat in the manifest: {duplicates[:3]}")
        for spec in specs:
            if not spec.name:
                raise InvalidArgument("a tensor in the manifest has no name")
            if spec.dtype not in DTYPES:
                raise InvalidArgument(f"tensor {spec.name}: dtype must be one of {sorted(DTYPES)}")
        total = sum(spec.nbytes for spec in specs)
        if total > max_total_bytes:
            raise InvalidArgument(f"the manifest announces {total} bytes; this server takes at most {max_total_bytes}")
        self._specs = tuple(specs)
        self._buffers = [bytearray(0) for _ in specs]

    def add(self, tensor_index: int, offset_bytes: int, data: bytes) -> None:
        """Appends a chunk; its offset must be the number of that tensor's bytes sent before."""
        if not 0 <= tensor_index < len(self._specs):
            raise InvalidArgument(f"chunk names tensor {tensor_index}; the manifest has {len(self._specs)}")
        spec, buffer = self._specs[tensor_index], self._buffers[tensor_index]
        if offset_bytes != len(buffer):
            raise InvalidArgument(
                f"tensor {spec.name}: chunk at byte {offset_bytes}, expected {len(buffer)} "
                "(chunks of a tensor must come in order)"
            )
        if len(buffer) + len(data) > spec.nbytes:
            raise InvalidArgument(f"tensor {spec.name}: more than the {spec.nbytes} bytes its shape and dtype give")
        buffer += data

    def tensors(self) -> dict[str, torch.Tensor]:
        """The complete tensors; fails if any is short."""
        out: dict[str, torch.Tensor] = {}
        for spec, buffer in zip(self._specs, self._buffers, strict=True):
            if len(buffer) != spec.nbytes:
                raise InvalidArgument(f"tensor {spec.name}: received {len(buffer)} of {spec.nbytes} bytes")
            dtype = DTYPES[spec.dtype]
            flat = torch.frombuffer(buffer, dtype=dtype) if buffer else torch.empty(0, dtype=dtype)
            out[spec.name] = flat.reshape(spec.shape)
        return out
