"""The PolicyService servicer: translates protos to engine calls and back, nothing more."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc

import drkernel
from drkernel.errors import InvalidArgument
from drkernel.v1 import policy_pb2 as pb
from drkernel.v1 import policy_pb2_grpc
from services.policy.engine import PolicyEngine
from services.policy.tensor_stream import TensorAssembler, TensorSpec
from services.policy.types import (
    ChatMessage,
    CheckpointUpdate,
    Completion,
    FinishReason,
    GenerationRequest,
    GenerationResult,
    LoraUpdate,
    ModelInfo,
    TensorsUpdate,
    WeightsUpdate,
)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["PolicyService"].full_name

_FINISH = {FinishReason.STOP: pb.FINISH_REASON_STOP, FinishReason.LENGTH: pb.FINISH_REASON_LENGTH}
_DTYPE = {
    pb.TENSOR_DTYPE_FLOAT32: "float32",
    pb.TENSOR_DTYPE_FLOAT16: "float16",
    pb.TENSOR_DTYPE_BFLOAT16: "bfloat16",
}


def generation_request(
    request: pb.GenerateRequest | pb.GenerateStreamRequest,
) -> GenerationRequest:
    """The domain request of a Generate or GenerateStream message."""
    kind = request.prompt.WhichOneof("kind")
    if kind == "text":
        prompt: str | tuple[ChatMessage, ...] = request.prompt.text
    elif kind == "chat":
        prompt = tuple(ChatMessage(m.role, m.content) for m in request.prompt.chat.messages)
    else:
        raise InvalidArgument("prompt is missing: set prompt.text or prompt.chat")
    sampling = request.sampling
    return GenerationRequest(
        prompt=prompt,
        n=sampling.n or 1,
        temperature=sampling.temperature if sampling.HasField("temperature") else 1.0,
        top_p=sampling.top_p if sampling.HasField("top_p") else 1.0,
        max_tokens=sampling.max_tokens or None,
        stop=tuple(sampling.stop),
        seed=sampling.seed if sampling.HasField("seed") else None,
        request_id=request.request_id,
    )


def _completion(completion: Completion) -> pb.Completion:
    return pb.Completion(
        index=completion.index,
        text=completion.text,
        token_ids=completion.token_ids,
        logprobs=completion.logprobs,
        finish_reason=_FINISH[completion.finish_reason],
        weights_version=completion.weights_version,
    )


def generate_response(result: GenerationResult) -> pb.GenerateResponse:
    """The Generate answer for a domain result."""
    return pb.GenerateResponse(
        request_id=result.request_id,
        completions=[_completion(c) for c in result.completions],
        prompt_token_ids=result.prompt_token_ids,
        seed=result.seed,
    )


def model_info_response(info: ModelInfo) -> pb.GetModelInfoResponse:
    backend = info.backend
    return pb.GetModelInfoResponse(
        model=info.model,
        backend=backend.backend,
        device=backend.device,
        dtype=backend.dtype,
        weights_version=info.weights_version,
        lora_adapter_dir=backend.lora_adapter,
        parameter_count=backend.parameter_count,
        max_context_tokens=backend.max_context_tokens,
        vocab_size=info.vocab_size,
        eos_token_ids=backend.eos_token_ids,
        has_chat_template=info.has_chat_template,
        queued_requests=info.queued_requests,
        running_requests=info.running_requests,
        version=drkernel.__version__,
    )


def _directory(value: str, field: str) -> Path:
    if not value:
        raise InvalidArgument(f"{field} is empty")
    return Path(value)


async def read_update(
    messages: AsyncIterator[pb.UpdateWeightsRequest], max_update_bytes: int
) -> tuple[WeightsUpdate, int | None]:
    """The update an UpdateWeights stream describes, and the version it asks for."""
    first = await anext(aiter(messages), None)
    if first is None or first.WhichOneof("item") != "header":
        raise InvalidArgument("the first UpdateWeights message must be a header")
    header = first.header
    version = header.weights_version if header.HasField("weights_version") else None
    source = header.WhichOneof("source")
    if source == "tensors":
        assembler = TensorAssembler(
            [TensorSpec(s.name, _DTYPE.get(s.dtype, ""), tuple(s.shape)) for s in header.tensors.tensors],
            max_update_bytes,
        )
        async for message in messages:
            if message.WhichOneof("item") != "chunk":
                raise InvalidArgument("only chunk messages may follow the header")
            chunk = message.chunk
            assembler.add(chunk.tensor_index, chunk.offset_bytes, chunk.data)
        return TensorsUpdate(assembler.tensors()), version
    if source is None:
        raise InvalidArgument("the header names no source: set checkpoint_dir, lora_adapter_dir or tensors")
    async for _ in messages:
        raise InvalidArgument(f"nothing may follow a {source} header")
    if source == "checkpoint_dir":
        return CheckpointUpdate(_directory(header.checkpoint_dir, source)), version
    return LoraUpdate(_directory(header.lora_adapter_dir, source)), version


class PolicyServicer(policy_pb2_grpc.PolicyServiceServicer):
    """Generate, GenerateStream, UpdateWeights and GetModelInfo over one engine."""

    def __init__(self, engine: PolicyEngine, max_update_bytes: int) -> None:
        self._engine, self._max_update_bytes = engine, max_update_bytes

    async def Generate(self, request: pb.GenerateRequest, context: grpc.aio.ServicerContext) -> pb.GenerateResponse:
        return generate_response(await self._engine.generate(generation_request(request)))

    async def GenerateStream(
        self, request: pb.GenerateStreamRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.GenerateStreamResponse]:
        prepared = self._engine.prepare(generation_request(request))
        first = True
        async for chunk in self._engine.stream(prepared):
            message = pb.GenerateStreamResponse(
                request_id=prepared.request_id,
                index=chunk.index,
                text=chunk.text,
                token_ids=chunk.token_ids,
                logprobs=chunk.logprobs,
                finish_reason=_FINISH[chunk.finish_reason] if chunk.finish_reason else 0,
                weights_version=chunk.weights_version,
            )
            if first:
                message.prompt_token_ids.extend(prepared.prompt_token_ids)
                message.seed = prepared.params.seed
                first = False
            yield message

    async def UpdateWeights(
        self,
        request_iterator: AsyncIterator[pb.UpdateWeightsRequest],
        context: grpc.aio.ServicerContext,
    ) -> pb.UpdateWeightsResponse:
        update, version = await read_update(request_iterator, self._max_update_bytes)
        result = await self._engine.update_weights(update, version)
        return pb.UpdateWeightsResponse(
            previous_weights_version=result.previous_version,
            weights_version=result.version,
            tensors_loaded=result.tensors_loaded,
            load_seconds=result.load_seconds,
        )

    async def GetModelInfo(
        self, request: pb.GetModelInfoRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetModelInfoResponse:
        return model_info_response(self._engine.info())
