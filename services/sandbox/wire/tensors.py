"""Packing tensors into a message's payload and rebuilding them from untrusted metadata: the
one wire module that imports torch."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from services.sandbox.shared import tensor_bits
from services.sandbox.wire.framing import ProtocolError, close_fds
from services.sandbox.wire.judge_candidate import TensorMeta

TRANSFER_DTYPES: dict[str, torch.dtype] = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float32,
        torch.float64,
        torch.float16,
        torch.bfloat16,
        torch.complex64,
        torch.complex128,
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
        torch.bool,
    )
}

Exporter = Callable[[torch.Tensor], tuple[int, object] | None]
Importer = Callable[[int, TensorMeta, torch.dtype], torch.Tensor]


def pack_tensors(
    tensors: Sequence[torch.Tensor], exporter: Exporter | None = None
) -> tuple[list[TensorMeta], bytearray, list[int], list[object]]:
    """Metadata, inline bytes, shared descriptors and what must stay alive until the peer
    has read them. ``exporter`` may take a tensor by descriptor (returning the fd and its
    keep-alive) or decline it (None), in which case it goes inline via host memory, copied
    once, straight into the payload (the sender then holds its outputs twice, not thrice)."""
    metas, inline, fds, keep = [], [], [], []
    for tensor in tensors:
        dtype = str(tensor_bits.dtype(tensor)).removeprefix("torch.")
        nbytes = tensor_bits.nbytes(tensor)
        shared = exporter(tensor) if exporter is not None else None
        if shared is not None:
            fd, alive = shared
            fds.append(fd)
            keep.append(alive)
        elif nbytes:
            inline.append(tensor)
        shape = list(tensor_bits.shape(tensor))
        metas.append(TensorMeta(dtype=dtype, shape=shape, nbytes=nbytes, shared=shared is not None))
    payload = bytearray(sum(tensor_bits.nbytes(t) for t in inline))
    offset = 0
    for tensor in inline:
        nbytes = tensor_bits.nbytes(tensor)
        target = torch.frombuffer(payload, dtype=torch.uint8, count=nbytes, offset=offset)
        tensor_bits.copy_into(target, tensor_bits.flat_bytes(tensor))  # read past patched tensor methods
        offset += nbytes
    return metas, payload, fds, keep


def unpack_tensors(
    metas: Sequence[TensorMeta], payload: bytearray, fds: Sequence[int] = (), importer: Importer | None = None
) -> list[torch.Tensor]:
    """Rebuilds tensors from untrusted metadata, bytes and descriptors, checking every size.
    Every descriptor is consumed (imported or closed), whatever happens."""
    pending = list(fds)
    view = memoryview(payload)
    try:
        tensors, offset = [], 0
        for meta in metas:
            dtype = TRANSFER_DTYPES.get(meta.dtype)
            if dtype is None:
                raise ProtocolError(f"unsupported output dtype {meta.dtype}")
            numel = 1
            for dim in meta.shape:
                numel *= dim
            itemsize = torch.empty((), dtype=dtype).element_size()
            if numel * itemsize != meta.nbytes:
                raise ProtocolError("output sizes do not add up")
            if meta.shared:
                if not pending or importer is None:
                    raise ProtocolError("a shared output came without its descriptor")
                try:
                    tensors.append(importer(pending.pop(0), meta, dtype))
                except RuntimeError as error:
                    raise ProtocolError(f"shared output could not be imported: {error}") from error
                continue
            if offset + meta.nbytes > len(payload):
                raise ProtocolError("output sizes do not add up")
            # a view, so that the payload is held once; copied only where the previous
            # outputs' sizes left it misaligned for its dtype
            flat = torch.empty(0, dtype=torch.uint8)
            if meta.nbytes:
                flat = torch.frombuffer(view[offset : offset + meta.nbytes], dtype=torch.uint8)
            if flat.data_ptr() % itemsize:
                flat = flat.clone()
            tensors.append(flat.view(dtype).reshape(meta.shape))
            offset += meta.nbytes
        if offset != len(payload):
            raise ProtocolError("payload longer than its outputs")
        if pending:
            raise ProtocolError("more descriptors than shared outputs")
        return tensors
    finally:
        close_fds(pending)
