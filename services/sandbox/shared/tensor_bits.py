"""Bit-level tensor comparison: the harness's evidence that memory did or did not change.

The functions used are captured when this module is imported, before any candidate code
runs, so that a candidate patching tensor methods cannot change what a snapshot sees.
"""

from __future__ import annotations

import secrets
from typing import Any

import torch

_clone = torch._C.TensorBase.clone
_equal = torch.equal
_arange = torch.arange
_int64 = torch.int64
_free_device_bytes = torch.cuda.mem_get_info

# A copy is the fastest exact snapshot; a large contiguous tensor is remembered by a keyed
# digest instead when a copy would crowd the device (less than this many copies' worth
# free), so that checking a 7.5 GB input does not take another 7.5 GB next to the judge's
# own copies. Host tensors take a digest from this size on.
DIGEST_MIN_BYTES = 64 * 2**20
_DIGEST_WHEN_FREE_BELOW_COPIES = 4
_HOST_DIGEST_MIN_BYTES = 2**30
_DIGEST_CHUNK_WORDS = 1 << 24


def _bytes(tensor: Any) -> torch.Tensor:
    return tensor.detach().reshape(-1).view(torch.uint8)


def bitwise_equal(a: Any, b: Any) -> bool:
    """Same shape, dtype and bytes (NaN payloads included)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    return bool(_equal(_bytes(a.contiguous()), _bytes(b.contiguous())))


def _digest(tensor: torch.Tensor, key: int) -> int:
    """A keyed linear hash of the tensor's bytes modulo 2**64, computed chunk by chunk on the
    tensor's device: a change at word i moves it by the change times a secret odd
    multiplier of i, so no edit that leaves it equal can be aimed without the key."""
    raw = _bytes(tensor)
    words = raw.view(torch.int32) if raw.numel() % 4 == 0 else raw
    total = torch.zeros((), dtype=_int64, device=tensor.device)
    multiplier, offset = key | 1, key >> 1
    for start in range(0, words.numel(), _DIGEST_CHUNK_WORDS):
        chunk = words[start : start + _DIGEST_CHUNK_WORDS].to(_int64)
        weights = _arange(start, start + chunk.numel(), dtype=_int64, device=tensor.device) * multiplier + offset
        total += (chunk * (weights | 1)).sum()
    return int(total)


def _digest_rather_than_copy(tensor: torch.Tensor) -> bool:
    nbytes = tensor.numel() * tensor.element_size()
    if nbytes < DIGEST_MIN_BYTES or not tensor.is_contiguous():
        return False
    if tensor.is_cuda:
        free, _ = _free_device_bytes(tensor.device)
        return free < _DIGEST_WHEN_FREE_BELOW_COPIES * nbytes
    return nbytes >= _HOST_DIGEST_MIN_BYTES


class Snapshot:
    """What a tensor holds now, to tell later whether its memory changed: an exact copy of
    a small tensor, a keyed digest of a large contiguous one."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self._shape, self._dtype = tensor.shape, tensor.dtype
        self._key = secrets.randbits(62) if _digest_rather_than_copy(tensor) else None
        self._value: Any = _digest(tensor, self._key) if self._key is not None else _clone(tensor.detach())

    @property
    def copy(self) -> torch.Tensor | None:
        """The exact copy held (None when the snapshot is a digest)."""
        return self._value if self._key is None else None

    def unchanged(self, tensor: torch.Tensor) -> bool:
        """True when ``tensor`` holds the same bytes as when the snapshot was taken."""
        if tensor.shape != self._shape or tensor.dtype != self._dtype:
            return False
        if self._key is None:
            return bitwise_equal(self._value, tensor.detach())
        return tensor.is_contiguous() and _digest(tensor, self._key) == self._value
