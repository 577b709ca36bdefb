"""The one way callers reach a policy server (the trainer, best-of-N sampling): a retrying
channel with a bound on requests in flight, and the UpdateWeights message stream for tensors
held in memory."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import torch

from drkernel.channels import open_aio_channel
from drkernel.sections import SecuritySettings
from drkernel.v1 import policy_pb2 as pb
from drkernel.v1 import policy_pb2_grpc
from services.policy.types import ChatMessage

SERVICE = pb.DESCRIPTOR.services_by_name["PolicyService"].full_name

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
            tensors=[pb.TensorSpec(name=name, dtype=_DTYPES[t.dtype], shape=list(t.shape)) for name, t in items]
        )
    )
    if weights_version is not None:
        header.weights_version = weights_version
    yield pb.UpdateWeightsRequest(header=header)
    for index, (_, tensor) in enumerate(items):
        data = tensor.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        for offset in range(0, len(data), chunk_bytes):
            yield pb.UpdateWeightsRequest(
                chunk=pb.TensorChunk(tensor_index=index, offset_bytes=offset, data=data[offset : offset + chunk_bytes])
            )


class PolicyClient:
    """Async calls to one PolicyService, at most ``concurrency`` generations at a time. Calls
    are not spread over replicas: UpdateWeights reaches the one server this client talks to,
    and its completions must come from those weights (the run's staleness bound)."""

    def __init__(
        self, address: str, concurrency: int = 8, timeout_seconds: float = 3600.0, *, security: SecuritySettings
    ) -> None:
        self.address = address
        self._channel = open_aio_channel(address, SERVICE, security, spread=False)
        self._stub = policy_pb2_grpc.PolicyServiceStub(self._channel)
        self._slots = asyncio.Semaphore(concurrency)
        self._timeout = timeout_seconds

    async def generate(
        self, messages: Sequence[ChatMessage], sampling: pb.SamplingParams, request_id: str = ""
    ) -> pb.GenerateResponse:
        """Samples ``sampling.n`` completions of a conversation rendered by the server."""
        chat = pb.Chat(messages=[pb.ChatMessage(role=m.role, content=m.content) for m in messages])
        request = pb.GenerateRequest(request_id=request_id, prompt=pb.Prompt(chat=chat), sampling=sampling)
        async with self._slots:
            return await self._stub.Generate(request, timeout=self._timeout)

    async def update_from_directory(self, directory: Path, weights_version: int) -> pb.UpdateWeightsResponse:
        """Points the server at safetensors on a path it can read (a shared volume)."""
        header = pb.WeightsHeader(weights_version=weights_version, checkpoint_dir=str(directory))
        return await self._stub.UpdateWeights(iter([pb.UpdateWeightsRequest(header=header)]), timeout=self._timeout)

    async def update_from_tensors(
        self, tensors: Mapping[str, torch.Tensor], weights_version: int
    ) -> pb.UpdateWeightsResponse:
        """Streams the tensors themselves (no shared volume needed)."""
        return await self._stub.UpdateWeights(tensor_update_requests(tensors, weights_version), timeout=self._timeout)

    async def model_info(self) -> pb.GetModelInfoResponse:
        return await self._stub.GetModelInfo(pb.GetModelInfoRequest(), timeout=60)

    async def close(self) -> None:
        await self._channel.close()
