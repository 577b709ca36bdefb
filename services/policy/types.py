"""The policy service's domain types: what the engine and its backends exchange.

Plain frozen dataclasses, free of gRPC and of torch imports, so the servicer, the benchmarks
and the trainer can share them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


class FinishReason(enum.Enum):
    """Why a completion ended."""

    STOP = "stop"  # an end-of-sequence token was sampled or a stop string appeared
    LENGTH = "length"  # max_tokens were sampled


@dataclass(frozen=True)
class ChatMessage:
    """One turn of a conversation, rendered with the model's chat template."""

    role: str
    content: str


Prompt = str | tuple[ChatMessage, ...]


@dataclass(frozen=True)
class GenerationRequest:
    """A request as the caller sent it; the engine validates it and fills in defaults."""

    prompt: Prompt
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = None  # None: the server's default
    stop: tuple[str, ...] = ()
    seed: int | None = None  # None: the server draws one and reports it
    request_id: str = ""


@dataclass(frozen=True)
class SamplingParams:
    """Validated sampling parameters handed to a backend.

    ``temperature == 0`` is greedy decoding. Log-probs are taken under the distribution that
    was sampled from: softmax(logits / temperature), restricted to the top_p nucleus and
    renormalised; for greedy decoding, under softmax(logits) (temperature 1, no nucleus).
    """

    n: int
    temperature: float
    top_p: float
    max_tokens: int
    stop: tuple[str, ...]
    seed: int

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


@dataclass(frozen=True)
class TokenDelta:
    """New tokens of one sample, as a backend produces them (usually one per step)."""

    index: int
    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    finish_reason: FinishReason | None = None


@dataclass(frozen=True)
class PreparedGeneration:
    """A validated request: its prompt rendered to token ids and its sampling parameters."""

    request_id: str
    prompt_token_ids: tuple[int, ...]
    params: SamplingParams


@dataclass(frozen=True)
class CompletionChunk:
    """A streamed piece of one completion: new text and the tokens behind it.

    ``text`` may lag ``token_ids`` by a few characters: text that could still turn into a stop
    string or an unfinished multi-byte character is held back until it is settled.
    """

    index: int
    text: str
    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    finish_reason: FinishReason | None
    weights_version: int


@dataclass(frozen=True)
class Completion:
    """One finished sample. ``token_ids`` and ``logprobs`` hold every sampled token (an
    end-of-sequence token included); ``text`` is their decoding, cut before a stop string."""

    index: int
    text: str
    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    finish_reason: FinishReason
    weights_version: int


@dataclass(frozen=True)
class GenerationResult:
    """Every completion of one request, all from the same weights version."""

    request_id: str
    prompt_token_ids: tuple[int, ...]
    completions: tuple[Completion, ...]
    seed: int


@dataclass(frozen=True)
class CheckpointUpdate:
    """New weights from a Hugging Face checkpoint directory (``*.safetensors``)."""

    directory: Path


@dataclass(frozen=True)
class TensorsUpdate:
    """New weights sent as named tensors (a full or partial state dict)."""

    tensors: Mapping[str, torch.Tensor]


@dataclass(frozen=True)
class LoraUpdate:
    """A LoRA adapter directory (peft format) served on top of the base weights, replacing
    any earlier adapter."""

    directory: Path


WeightsUpdate = CheckpointUpdate | TensorsUpdate | LoraUpdate


@dataclass(frozen=True)
class UpdateResult:
    """The outcome of a weights update."""

    previous_version: int
    version: int
    tensors_loaded: int
    load_seconds: float


@dataclass(frozen=True)
class BackendInfo:
    """What a backend reports about the model it serves."""

    backend: str
    device: str
    dtype: str
    parameter_count: int
    max_context_tokens: int
    eos_token_ids: tuple[int, ...]
    lora_adapter: str  # directory of the active adapter; empty when none


@dataclass(frozen=True)
class ModelInfo:
    """What GetModelInfo reports."""

    model: str
    backend: BackendInfo
    weights_version: int
    vocab_size: int
    has_chat_template: bool
    queued_requests: int
    running_requests: int
