"""The transformers backend: a Hugging Face causal LM on CPU or GPU, always available.

Requests are batched continuously (``batcher.py``): every sample of every request in flight is
decoded in one batch over a shared, left-padded KV cache, requests join and leave between
forward passes, and each row samples with its own request's temperature, top-p, seed, stop
strings and ``max_tokens``. Weight updates run on the batcher's worker thread once no row is in
flight, so they never land in the middle of a generation.

A sampled token's log-prob is ``log softmax(logits / T)`` renormalised over the top-p nucleus;
under greedy decoding it is ``log softmax(logits)`` (``sampling.py``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers reads it: never reach a model hub

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, DynamicCache, PreTrainedModel, PreTrainedTokenizerBase

from drkernel.errors import InvalidArgument
from services.policy.batcher import DONE, BatchRequest, ContinuousBatcher
from services.policy.kv_batch import check_cache
from services.policy.types import (
    BackendInfo,
    CheckpointUpdate,
    LoraUpdate,
    SamplingParams,
    TokenDelta,
    WeightsUpdate,
)


def resolve_device(device: str) -> torch.device:
    """``auto`` is the first CUDA GPU when one is visible, else the CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``auto`` is bfloat16 on GPUs and float32 on CPUs (where bfloat16 is slow)."""
    if dtype == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    return getattr(torch, dtype)


def read_checkpoint(directory: Path) -> dict[str, torch.Tensor]:
    """Every tensor of the ``*.safetensors`` files of a Hugging Face checkpoint directory."""
    tensors: dict[str, torch.Tensor] = {}
    for path in sorted(directory.glob("*.safetensors")):
        tensors.update(load_file(path))
    return tensors


class TransformersBackend:
    """A causal LM from a local directory, decoded by a continuous batcher."""

    name = "transformers"

    def __init__(
        self,
        model_dir: Path,
        tokenizer: PreTrainedTokenizerBase,
        device: str = "auto",
        dtype: str = "auto",
        max_batch_size: int = 64,
        batch_window_ms: float = 10.0,
    ) -> None:
        self._device = resolve_device(device)
        self._dtype = resolve_dtype(dtype, self._device)
        base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=self._dtype, local_files_only=True)
        check_cache(base.config)
        self._base: PreTrainedModel = base.to(self._device).eval()
        eos = base.generation_config.eos_token_id
        eos_ids = {eos} if isinstance(eos, int) else set(eos or ())
        if tokenizer.eos_token_id is not None:
            eos_ids.add(tokenizer.eos_token_id)
        self._eos = frozenset(eos_ids)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(eos_ids)
        self._model: torch.nn.Module = self._base  # a PeftModel while a LoRA adapter is served
        self._lora_dir = ""
        self._batcher = ContinuousBatcher(
            self._forward, tokenizer, self._eos, pad, self._device, max_batch_size, batch_window_ms / 1000
        )

    def info(self) -> BackendInfo:
        return BackendInfo(
            backend=self.name,
            device=str(self._device),
            dtype=str(self._dtype).removeprefix("torch."),
            parameter_count=sum(p.numel() for p in self._base.parameters()),
            max_context_tokens=int(self._base.config.max_position_embeddings),
            eos_token_ids=tuple(sorted(self._eos)),
            lora_adapter=self._lora_dir,
        )

    async def stream(self, prompt_token_ids: Sequence[int], params: SamplingParams) -> AsyncIterator[list[TokenDelta]]:
        queue: asyncio.Queue[object] = asyncio.Queue()
        request = BatchRequest(prompt_token_ids, params, asyncio.get_running_loop(), queue)
        self._batcher.submit(request)
        try:
            while (item := await queue.get()) is not DONE:
                if isinstance(item, BaseException):
                    raise item
                yield item  # type: ignore[misc]
        finally:
            request.cancelled.set()

    def _forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor, cache: DynamicCache
    ) -> torch.Tensor:
        output = self._model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        return output.logits[:, -1]

    async def update(self, update: WeightsUpdate, version: int) -> int:
        return await asyncio.wrap_future(self._batcher.exclusive(lambda: self._update(update)))

    @torch.no_grad()
    def _update(self, update: WeightsUpdate) -> int:
        if isinstance(update, LoraUpdate):
            return self._load_lora(update.directory)
        tensors = read_checkpoint(update.directory) if isinstance(update, CheckpointUpdate) else update.tensors
        self._drop_lora()
        return self._load_tensors(tensors)

    def _load_tensors(self, tensors: Mapping[str, torch.Tensor]) -> int:
        """Copies named tensors into the base model after checking every name and shape, so a
        bad update changes nothing."""
        own = self._base.state_dict()
        unknown = sorted(set(tensors) - set(own))
        if unknown:
            raise InvalidArgument(f"{len(unknown)} tensor name(s) not in the model, e.g. {unknown[:3]}")
        for name, tensor in tensors.items():
            if tuple(tensor.shape) != tuple(own[name].shape):
                raise InvalidArgument(
                    f"tensor {name}: shape {list(tensor.shape)} where the model has {list(own[name].shape)}"
                )
        for name, tensor in tensors.items():
            own[name].copy_(tensor.to(device=self._device, dtype=own[name].dtype))
        return len(tensors)

    def _load_lora(self, directory: Path) -> int:
        from peft import PeftModel

        self._drop_lora()
        try:
            model = PeftModel.from_pretrained(self._base, directory, is_trainable=False)
        except (ValueError, KeyError, RuntimeError) as error:
            raise InvalidArgument(f"LoRA adapter {directory} does not fit the model: {error}") from error
        self._model = model.to(self._device).eval()
        self._lora_dir = str(directory)
        return sum(1 for name, _ in model.named_parameters() if "lora_" in name)

    def _drop_lora(self) -> None:
        if self._model is not self._base:
            self._base = self._model.unload()  # type: ignore[operator]
            self._model = self._base
            self._lora_dir = ""

    async def close(self) -> None:
        await asyncio.to_thread(self._batcher.close)
