"""Bit-level tensor comparison: the harness's evidence that memory did or did not change.

Every tensor operation used here, and by whatever reads a candidate's tensors for the judge
(the outputs handed over, the inputs refilled), is captured when this module is imported,
before any candidate code runs, straight from ``torch._C.TensorBase`` (methods and
attributes alike): a candidate patching ``torch.Tensor.clone``, ``detach``, ``contiguous``,
``copy_``, ``shape`` or any other method or property cannot change what a snapshot sees or
what the judge receives. What lies below Python (an ATen kernel registered anew, a dispatch
mode left on) is watched by the harness's integrity check (candidate/integrity.py).
"""

from __future__ import annotations

import random
import secrets
from typing import Any

import torch

_BASE = torch._C.TensorBase.__dict__
_clone = _BASE["clone"]
_detach = _BASE["detach"]
_contiguous = _BASE["contiguous"]
_is_contiguous = _BASE["is_contiguous"]
_reshape = _BASE["reshape"]
_view = _BASE["view"]
_to = _BASE["to"]
_sum = _BASE["sum"]
_copy = _BASE["copy_"]
_numel = _BASE["numel"]
_element_size = _BASE["element_size"]
_shape = _BASE["shape"].__get__
_dtype = _BASE["dtype"].__get__
_device = _BASE["device"].__get__
_is_cuda = _BASE["is_cuda"].__get__
_data = _BASE["data"].__get__
_layout = _BASE["layout"].__get__
_is_floating_point = _BASE["is_floating_point"]
_is_complex = _BASE["is_complex"]
_untyped_storage = _BASE["untyped_storage"]
_item = _BASE["item"]
_tolist = _BASE["tolist"]
_narrow = _BASE["narrow"]
_storage_offset = _BASE["storage_offset"]
_set = _BASE["set_"]
_storage_pointer = torch._C.StorageBase.__dict__["data_ptr"]
_storage_nbytes = torch._C.StorageBase.__dict__["nbytes"]
_equal = torch.equal
_empty = torch.empty
_stack = torch.stack
_random = _BASE["random_"]
_Generator = torch.Generator
_Random = random.Random
_mul = torch.mul
_bitwise_or = torch.bitwise_or
_int64 = torch.int64
_uint8 = torch.uint8
_int32 = torch.int32
_no_grad = torch.no_grad
_free_device_bytes = torch.cuda.mem_get_info


def shape(tensor: Any) -> torch.Size:
    """The tensor's shape, read past any patched ``torch.Tensor`` attribute."""
    return _shape(tensor)


def dtype(tensor: Any) -> torch.dtype:
    """The tensor's dtype, read past any patched ``torch.Tensor`` attribute."""
    return _dtype(tensor)


def device(tensor: Any) -> torch.device:
    """The tensor's device, read past any patched ``torch.Tensor`` attribute."""
    return _device(tensor)


def layout(tensor: Any) -> torch.layout:
    return _layout(tensor)


def numel(tensor: Any) -> int:
    return int(_numel(tensor))


def element_size(tensor: Any) -> int:
    return int(_element_size(tensor))


def is_floating_point(tensor: Any) -> bool:
    return bool(_is_floating_point(tensor))


def is_complex(tensor: Any) -> bool:
    return bool(_is_complex(tensor))


def item(tensor: Any) -> Any:
    """A one-element tensor's value as a Python number (``bool(t)``, ``int(t)`` and
    ``float(t)`` go through methods a candidate can replace)."""
    return _item(tensor)


def values(tensor: Any) -> list[Any]:
    """The tensor's elements as (nested) Python lists."""
    return _tolist(tensor)  # type: ignore[no-any-return]


def storage(tensor: Any) -> tuple[int, int] | None:
    """Where the tensor's storage starts and how many bytes it holds, or None for a tensor
    without one (meta, sparse) or without memory yet."""
    try:
        held = _untyped_storage(tensor)
    except (RuntimeError, NotImplementedError, TypeError):
        return None
    pointer = int(_storage_pointer(held))
    return (pointer, int(_storage_nbytes(held))) if pointer else None


def whole_storage(tensor: Any) -> torch.Tensor:
    """The tensor's whole storage as one flat tensor of its dtype, whatever part of it the
    tensor views: what is written anywhere in that memory shows there."""
    held = _untyped_storage(tensor)
    size = int(_storage_nbytes(held)) // max(1, int(_element_size(tensor)))
    return _set(_empty(0, dtype=_dtype(tensor), device=_device(tensor)), held, 0, (size,))  # type: ignore[no-any-return]


_SAME_WIDTH_INTEGERS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def as_integers(tensor: Any) -> torch.Tensor | None:
    """The tensor's elements as integers of the same width, bit for bit: two values are the
    same memory only when these are equal (NaN payloads, signed zeros and the low bits of
    large int64 values all show; float64 comparisons hide them). None where no integer is as
    wide (complex128)."""
    same_width = _SAME_WIDTH_INTEGERS.get(int(_element_size(tensor)))
    return None if same_width is None else _view(_detach(tensor), same_width)


def nbytes(tensor: Any) -> int:
    """How many bytes the tensor's elements take."""
    return int(_numel(tensor)) * int(_element_size(tensor))


def detached(tensor: Any) -> torch.Tensor:
    """``tensor.detach()``, whatever ``torch.Tensor.detach`` has become."""
    return _detach(tensor)


def flat_bytes(tensor: Any) -> torch.Tensor:
    """The tensor's elements as one contiguous run of bytes (a copy only when not contiguous)."""
    return _view(_reshape(_contiguous(_detach(tensor)), -1), _uint8)


def copy_into(target: Any, source: Any) -> None:
    """``target.copy_(source)`` through ``target.data``, so that the version counter of
    ``target`` does not move, whatever ``torch.Tensor.copy_`` has become."""
    with _no_grad():
        _copy(_data(target), source)


# A copy is the fastest exact snapshot; a large contiguous tensor is remembered by a keyed
# digest instead when a copy would crowd the device (less than this many copies' worth
# free), so that checking a 7.5 GB input does not take another 7.5 GB next to the judge's
# own copies. Host tensors take a digest from this size on.
DIGEST_MIN_BYTES = 64 * 2**20
_DIGEST_WHEN_FREE_BELOW_COPIES = 4
_HOST_DIGEST_MIN_BYTES = 2**30
_DIGEST_CHUNK_WORDS = 1 << 24
_WORD_WEIGHTS: dict[torch.device, torch.Tensor] = {}
_WORDS = {8: torch.int64, 4: torch.int32}


def bitwise_equal(a: Any, b: Any) -> bool:
    """Same shape, dtype and bytes (NaN payloads included)."""
    if _shape(a) != _shape(b) or _dtype(a) != _dtype(b):
        return False
    if _numel(a) == 0:
        return True
    return bool(_equal(flat_bytes(a), flat_bytes(b)))


def _word_weights(device: torch.device) -> torch.Tensor:
    """Secret odd 64-bit weights, one per word of a chunk, drawn once per process and device."""
    weights = _WORD_WEIGHTS.get(device)
    if weights is None:
        generator = _Generator(device=device)
        generator.manual_seed(secrets.randbits(63))
        weights = _bitwise_or(_random(_empty(_DIGEST_CHUNK_WORDS, dtype=_int64, device=device), generator=generator), 1)
        _WORD_WEIGHTS[device] = weights
    return weights


def _digest(tensor: torch.Tensor, key: int) -> int:
    """A keyed linear hash of the tensor's bytes modulo 2**64, computed chunk by chunk on the
    tensor's device: word i of chunk k is multiplied by the secret odd weight i (the same for
    every chunk) and the chunk's sum by an odd multiplier drawn from ``key``, so a change at
    any word moves the hash by the change times an odd number no edit can be aimed at without
    both. Two passes of the data per chunk (a product, promoted to 64 bits in the kernel, and
    its sum): hashing 6.4 GB took 60 ms on an H100 with the seven passes it had before."""
    raw = flat_bytes(tensor)
    size, offset = _numel(raw), _storage_offset(raw)  # a view of a larger tensor starts anywhere
    width = next(width for width in (8, 4, 1) if size % width == 0 and offset % width == 0)
    words = _view(raw, _WORDS[width]) if width > 1 else raw
    weights = _word_weights(_device(tensor))
    count = int(_numel(words))
    sums = []
    for start in range(0, count, _DIGEST_CHUNK_WORDS):
        length = min(_DIGEST_CHUNK_WORDS, count - start)
        sums.append(_sum(_mul(_narrow(words, 0, start, length), _narrow(weights, 0, 0, length))))
    chunks = _Random(key)
    total = sum((chunks.getrandbits(64) | 1) * value for value in _tolist(_stack(sums))) if sums else 0
    return total % 2**64


def _digest_rather_than_copy(tensor: torch.Tensor) -> bool:
    size = nbytes(tensor)
    if size < DIGEST_MIN_BYTES or not _is_contiguous(tensor):
        return False
    if _is_cuda(tensor):
        free, _ = _free_device_bytes(_device(tensor))
        return free < _DIGEST_WHEN_FREE_BELOW_COPIES * size
    return size >= _HOST_DIGEST_MIN_BYTES


class Snapshot:
    """What a tensor holds now, to tell later whether its memory changed: an exact copy of
    a small tensor, a keyed digest of a large contiguous one."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self._shape, self._dtype = _shape(tensor), _dtype(tensor)
        self._key = secrets.randbits(62) if _digest_rather_than_copy(tensor) else None
        self._value: Any = _digest(tensor, self._key) if self._key is not None else _clone(_detach(tensor))

    @property
    def copy(self) -> torch.Tensor | None:
        """The exact copy held (None when the snapshot is a digest)."""
        return self._value if self._key is None else None

    def unchanged(self, tensor: torch.Tensor) -> bool:
        """True when ``tensor`` holds the same bytes as when the snapshot was taken."""
        if _shape(tensor) != self._shape or _dtype(tensor) != self._dtype:
            return False
        if self._key is None:
            return bitwise_equal(self._value, _detach(tensor))
        return _is_contiguous(tensor) and _digest(tensor, self._key) == self._value
