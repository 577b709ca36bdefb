"""The transformers backend: Hugging Face ``generate`` on CPU or GPU, always available.

The ``n`` samples of a request form one batch (split into ``max_batch_size`` rows at most);
requests run one at a time on a single worker thread, which also applies weight updates, so
updates can never land in the middle of a generation.

Log-probs come from the distribution ``generate`` actually samples from. The temperature and
top-p warpers are passed as our own logits processors (``generate`` adds none of its own: the
generation config carries temperature 1, top_k 0, top_p 1), followed by a processor that keeps
``log_softmax`` of the final scores; a stopping criterion then reads the log-prob of the token
that was drawn. So a sampled token's log-prob is ``log softmax(logits / T)`` renormalised over
the top-p nucleus; under greedy decoding it is ``log softmax(logits)``.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers reads it: never reach a model hub

import torch
from safetensors.torch import load_file
from transformers import (
    AutoModelForCausalLM,
    GenerationConfig,
    LogitsProcessor,
    LogitsProcessorList,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    StoppingCriteria,
    StoppingCriteriaList,
    StopStringCriteria,
    TemperatureLogitsWarper,
    TopPLogitsWarper,
)

from drkernel.errors import InvalidArgument
from services.policy.types import (
    BackendInfo,
    CheckpointUpdate,
    FinishReason,
    LoraUpdate,
    SamplingParams,
    TokenDelta,
    WeightsUpdate,
)

_DONE = object()
Emit = Callable[[object], None]


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


class _LogProbCapture(LogitsProcessor):
    """Last in the processor list: keeps log-softmax of the scores about to be sampled from."""

    def __init__(self) -> None:
        self.logprobs: torch.Tensor | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        self.logprobs = torch.log_softmax(scores.float(), dim=-1)
        return scores


class _StepObserver(StoppingCriteria):
    """Called once per step after the token is drawn: reports each live row's token with its
    log-prob and decides which rows are finished (end of sequence, stop string, length)."""

    def __init__(
        self,
        capture: _LogProbCapture,
        first_index: int,
        rows: int,
        eos_token_ids: frozenset[int],
        max_tokens: int,
        stop_strings: StopStringCriteria | None,
        emit: Emit,
        cancelled: threading.Event,
    ) -> None:
        self._capture, self._first_index = capture, first_index
        self._live = list(range(rows))
        self._eos, self._max_tokens, self._stop_strings = eos_token_ids, max_tokens, stop_strings
        self._emit, self._cancelled = emit, cancelled
        self._steps = 0

    def __call__(
        self, input_ids: torch.LongTensor, scores: torch.FloatTensor | None, **kwargs: object
    ) -> torch.BoolTensor:
        assert self._capture.logprobs is not None
        self._steps += 1
        drawn = input_ids[:, -1]
        logprobs = self._capture.logprobs.gather(1, drawn[:, None]).squeeze(1).tolist()
        tokens = drawn.tolist()
        hits = self._stop_strings(input_ids, scores).tolist() if self._stop_strings else None
        deltas, live = [], []
        for row in self._live:
            reason = None
            if tokens[row] in self._eos or (hits is not None and hits[row]):
                reason = FinishReason.STOP
            elif self._steps >= self._max_tokens:
                reason = FinishReason.LENGTH
            else:
                live.append(row)
            deltas.append(TokenDelta(self._first_index + row, (tokens[row],), (logprobs[row],), reason))
        self._live = live
        self._emit(deltas)
        finished = torch.ones(len(tokens), dtype=torch.bool, device=input_ids.device)
        if not self._cancelled.is_set():
            finished[live] = False
        return finished


class TransformersBackend:
    """A causal LM from a local directory, served with ``generate``."""

    name = "transformers"

    def __init__(
        self,
        model_dir: Path,
        tokenizer: PreTrainedTokenizerBase,
        device: str = "auto",
        dtype: str = "auto",
        max_batch_size: int = 64,
    ) -> None:
        self._device = resolve_device(device)
        self._dtype = resolve_dtype(dtype, self._device)
        self._tokenizer = tokenizer
        self._max_batch_size = max_batch_size
        base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=self._dtype, local_files_only=True)
        self._base: PreTrainedModel = base.to(self._device).eval()
        eos = base.generation_config.eos_token_id
        eos_ids = {eos} if isinstance(eos, int) else set(eos or ())
        if tokenizer.eos_token_id is not None:
            eos_ids.add(tokenizer.eos_token_id)
        self._eos = frozenset(eos_ids)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(eos_ids)
        # Forget the checkpoint's sampling defaults (top_k, repetition penalty, ...): every
        # request sets its own, and nothing else may reshape the distribution.
        base.generation_config = GenerationConfig(eos_token_id=sorted(eos_ids), pad_token_id=pad)
        self._model: torch.nn.Module = self._base  # a PeftModel while a LoRA adapter is served
        self._lora_dir = ""
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="policy-generate")

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
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        cancelled = threading.Event()

        def emit(item: object) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        work = loop.run_in_executor(self._worker, self._generate, list(prompt_token_ids), params, emit, cancelled)
        try:
            while (item := await queue.get()) is not _DONE:
                yield item  # type: ignore[misc]
            await work  # re-raises what the worker raised
        finally:
            cancelled.set()

    @torch.inference_mode()
    def _generate(
        self,
        prompt_token_ids: list[int],
        params: SamplingParams,
        emit: Emit,
        cancelled: threading.Event,
    ) -> None:
        try:
            torch.manual_seed(params.seed)
            prompt = torch.tensor([prompt_token_ids], device=self._device)
            stop_strings = StopStringCriteria(self._tokenizer, list(params.stop)) if params.stop else None
            for first in range(0, params.n, self._max_batch_size):
                if cancelled.is_set():
                    break
                rows = min(self._max_batch_size, params.n - first)
                self._generate_batch(prompt.expand(rows, -1), first, params, stop_strings, emit, cancelled)
        finally:
            emit(_DONE)

    def _generate_batch(
        self,
        batch: torch.Tensor,
        first_index: int,
        params: SamplingParams,
        stop_strings: StopStringCriteria | None,
        emit: Emit,
        cancelled: threading.Event,
    ) -> None:
        capture = _LogProbCapture()
        processors = LogitsProcessorList()
        if not params.greedy:
            processors.append(TemperatureLogitsWarper(params.temperature))
            if params.top_p < 1.0:
                processors.append(TopPLogitsWarper(params.top_p))
        processors.append(capture)
        observer = _StepObserver(
            capture,
            first_index,
            batch.shape[0],
            self._eos,
            params.max_tokens,
            stop_strings,
            emit,
            cancelled,
        )
        config = GenerationConfig(
            do_sample=not params.greedy,
            temperature=1.0,
            top_k=None if params.greedy else 0,  # 0 turns off the library's default of 50
            top_p=1.0,
            max_new_tokens=params.max_tokens,
            eos_token_id=self._base.generation_config.eos_token_id,
            pad_token_id=self._base.generation_config.pad_token_id,
        )
        self._model.generate(  # type: ignore[operator]
            input_ids=batch,
            attention_mask=torch.ones_like(batch),
            generation_config=config,
            logits_processor=processors,
            stopping_criteria=StoppingCriteriaList([observer]),
        )

    async def update(self, update: WeightsUpdate, version: int) -> int:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, self._update, update)

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
        await asyncio.to_thread(self._worker.shutdown, wait=True, cancel_futures=True)
