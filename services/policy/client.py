"""Client-side helpers for callers of PolicyService (the trainer): the UpdateWeights message
stream for tensors held in memory."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import torch

from drkernel.v1 import policy_pb2 as pb

_DTYPES = {
    torch.float32: pb.TENSOR_DTYPE_FLOAT32,
    torch.float16: pb.TENSOR_DTYPE_FLOAT16,
    torch.bfloat16: pb.TENSOR_DTYPE_BFLOAT16,
}
DEFAULT_CHUNK_BYTES = 4 * 2**20


def tensor_update_requests(
    tensors: Mapping[str, torch.Tensor],
    weights_version: int | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> Iterator[pb.UpdateWeightsRequest]:
    """The header, then each tensor's bytes in chunks of at most ``chunk_bytes``. Tensors are
    copied to the CPU one at a time, so a GPU state dict is never duplicated whole in memory."""
    items = list(tensors.items())
    for name, tensor in items:
        if tensor.dtype not in _DTYPES:
            raise ValueError(f"tensor {name}: dtype {tensor.dtype} cannot be sent; use float32, float16 or bfloat16")
    header = pb.WeightsHeader(
        tensors=pb.TensorManifest(
            tensors=[
                pb.TensorSpec(name=name, dtype=_DTYPES[t.dtype], shape=list(t.shape))
                for name, t in items
            ]
        )
    )
    if weights_version is not None:
        header.weights_version = weights_version
    yield pb.UpdateWeightsRequest(header=header)
    for index, (_, tensor) in enumerate(items):
        data = tensor.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        for offset in range(0, len(data), chunk_bytes):
            yield pb.UpdateWeightsRequest(
                chunk=pb.TensorChunk(
                    tensor_index=index, offset_bytes=offset, data=data[offset : offset + chunk_bytes]
                )
            )
