"""The policy engine: validates requests, renders prompts, runs them on a backend and swaps
weights without ever mixing two weight versions inside one request.

A generation holds a read lease on the current weights version for its whole life; an update
waits until the running generations are done, keeps new ones waiting meanwhile, swaps the
weights and bumps the version. Every completion is stamped with the version it was sampled
under.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict
from math import isfinite
from typing import TYPE_CHECKING

from drkernel.errors import FailedPrecondition, InvalidArgument, ResourceExhausted
from drkernel.logs import get_logger
from services.policy import metrics
from services.policy.backend import Backend, open_backend, resolve_backend_name
from services.policy.chat import chat_token_ids
from services.policy.default_model import MODEL_NAME, ensure_default_model
from services.policy.detokenize import IncrementalText
from services.policy.types import (
    ChatMessage,
    CheckpointUpdate,
    Completion,
    CompletionChunk,
    GenerationRequest,
    GenerationResult,
    LoraUpdate,
    ModelInfo,
    PreparedGeneration,
    SamplingParams,
    TensorsUpdate,
    UpdateResult,
    WeightsUpdate,
)

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from services.policy.settings import PolicySettings

log = get_logger(__name__)

MAX_REQUEST_ID_BYTES = 256
MAX_STOP_STRINGS = 16


class VersionGate:
    """Many generations or one update at a time; a waiting update goes before new generations."""

    def __init__(self, version: int = 0) -> None:
        self.version = version
        self._running = 0
        self._updating = False
        self._changed = asyncio.Condition()

    @asynccontextmanager
    async def generation(self) -> AsyncIterator[int]:
        """Holds the current weights for one request; yields their version."""
        async with self._changed:
            await self._changed.wait_for(lambda: not self._updating)
            self._running += 1
            version = self.version
        try:
            yield version
        finally:
            async with self._changed:
                self._running -= 1
                self._changed.notify_all()

    @asynccontextmanager
    async def update(self) -> AsyncIterator[None]:
        """Waits for running generations to finish and holds new ones back meanwhile."""
        async with self._changed:
            await self._changed.wait_for(lambda: not self._updating)
            self._updating = True
            await self._changed.wait_for(lambda: self._running == 0)
        try:
            yield
        finally:
            async with self._changed:
                self._updating = False
                self._changed.notify_all()


def _source_name(update: WeightsUpdate) -> str:
    return {CheckpointUpdate: "checkpoint", TensorsUpdate: "tensors", LoraUpdate: "lora"}[type(update)]


class PolicyEngine:
    """The service's core: everything but the translation from and to protos."""

    def __init__(
        self,
        backend: Backend,
        tokenizer: PreTrainedTokenizerBase,
        model_name: str,
        settings: PolicySettings,
    ) -> None:
        self._backend, self._tokenizer = backend, tokenizer
        self._model_name, self._settings = model_name, settings
        self._gate = VersionGate()
        self._admitted = self._queued = 0
        metrics.WEIGHTS_VERSION.set(0)

    def info(self) -> ModelInfo:
        backend = self._backend.info()
        return ModelInfo(
            model=self._model_name,
            backend=backend,
            weights_version=self._gate.version,
            vocab_size=len(self._tokenizer),
            has_chat_template=bool(self._tokenizer.chat_template),
            queued_requests=self._queued,
            running_requests=self._admitted - self._queued,
        )

    def prepare(self, request: GenerationRequest) -> PreparedGeneration:
        """Checks a request, renders its prompt to token ids and settles its parameters."""
        try:
            return self._prepare(request)
        except InvalidArgument:
            metrics.REQUESTS.labels("invalid").inc()
            raise

    def _prepare(self, request: GenerationRequest) -> PreparedGeneration:
        s = self._settings
        if len(request.request_id.encode()) > MAX_REQUEST_ID_BYTES:
            raise InvalidArgument(f"request_id is longer than {MAX_REQUEST_ID_BYTES} bytes")
        if not 1 <= request.n <= s.max_n:
            raise InvalidArgument(f"n must be between 1 and {s.max_n}, got {request.n}")
        if not (isfinite(request.temperature) and request.temperature >= 0):
            raise InvalidArgument(f"temperature must be >= 0 (0 is greedy), got {request.temperature}")
        if not 0 < request.top_p <= 1:
            raise InvalidArgument(f"top_p must be in (0, 1], got {request.top_p}")
        max_tokens = s.default_max_tokens if request.max_tokens is None else request.max_tokens
        if not 1 <= max_tokens <= s.max_tokens_cap:
            raise InvalidArgument(f"max_tokens must be between 1 and {s.max_tokens_cap}, got {max_tokens}")
        if len(request.stop) > MAX_STOP_STRINGS or not all(request.stop):
            raise InvalidArgument(f"stop takes at most {MAX_STOP_STRINGS} non-empty strings")
        prompt_ids = self._render(request.prompt)
        context = self._backend.info().max_context_tokens
        if len(prompt_ids) + max_tokens > context:
            raise InvalidArgument(
                f"prompt ({len(prompt_ids)} tokens) plus max_tokens ({max_tokens}) exceeds the "
                f"model's context of {context} tokens"
            )
        params = SamplingParams(
            n=request.n,
            temperature=request.temperature,
            top_p=request.top_p,
            max_tokens=max_tokens,
            stop=request.stop,
            seed=secrets.randbits(63) if request.seed is None else request.seed,
        )
        return PreparedGeneration(request.request_id or uuid.uuid4().hex, tuple(prompt_ids), params)

    def _render(self, prompt: str | tuple[ChatMessage, ...]) -> list[int]:
        if isinstance(prompt, str):
            if not prompt:
                raise InvalidArgument("the prompt is empty: send prompt text or chat messages")
            return list(self._tokenizer.encode(prompt))
        return chat_token_ids(self._tokenizer, prompt)

    def _admit(self) -> None:
        if self._admitted >= self._settings.queue_capacity:
            metrics.REQUESTS.labels("refused").inc()
            raise ResourceExhausted(
                f"{self._admitted} generation requests in progress; retry later",
                self._settings.retry_pushback_ms,
            )
        self._admitted += 1
        self._queued += 1
        metrics.QUEUED.inc()

    async def stream(self, prepared: PreparedGeneration) -> AsyncIterator[CompletionChunk]:
        """Generates the prepared request, yielding each sample's pieces as they come."""
        self._admit()
        started = time.perf_counter()
        queued, outcome, generated = True, "error", 0
        try:
            async with self._gate.generation() as version:
                texts = {i: IncrementalText(self._tokenizer, prepared.params.stop) for i in range(prepared.params.n)}
                async for deltas in self._backend.stream(prepared.prompt_token_ids, prepared.params):
                    if queued:
                        queued = False
                        self._queued -= 1
                        metrics.QUEUED.dec()
                        metrics.RUNNING.inc()
                        metrics.FIRST_TOKEN_SECONDS.observe(time.perf_counter() - started)
                    for delta in deltas:
                        text = texts[delta.index].add(delta.token_ids)
                        if delta.finish_reason is not None:
                            text += texts[delta.index].finish()
                            metrics.COMPLETIONS.labels(delta.finish_reason.value).inc()
                        generated += len(delta.token_ids)
                        yield CompletionChunk(
                            delta.index,
                            text,
                            delta.token_ids,
                            delta.logprobs,
                            delta.finish_reason,
                            version,
                        )
            outcome = "ok"
        except (GeneratorExit, asyncio.CancelledError):
            outcome = "cancelled"
            raise
        finally:
            self._admitted -= 1
            if queued:
                self._queued -= 1
                metrics.QUEUED.dec()
            else:
                metrics.RUNNING.dec()
            seconds = time.perf_counter() - started
            metrics.REQUESTS.labels(outcome).inc()
            metrics.TOKENS.labels("prompt").inc(len(prepared.prompt_token_ids))
            metrics.TOKENS.labels("generated").inc(generated)
            metrics.GENERATION_SECONDS.observe(seconds)
            log.info(
                "generation finished",
                request_id=prepared.request_id,
                outcome=outcome,
                n=prepared.params.n,
                prompt_tokens=len(prepared.prompt_token_ids),
                generated_tokens=generated,
                seconds=seconds,
            )

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        """Generates every sample of a request and returns them together."""
        prepared = self.prepare(request)
        n = prepared.params.n
        texts: list[list[str]] = [[] for _ in range(n)]
        tokens: list[list[int]] = [[] for _ in range(n)]
        logprobs: list[list[float]] = [[] for _ in range(n)]
        ends: list[CompletionChunk | None] = [None] * n
        async for chunk in self.stream(prepared):
            texts[chunk.index].append(chunk.text)
            tokens[chunk.index].extend(chunk.token_ids)
            logprobs[chunk.index].extend(chunk.logprobs)
            if chunk.finish_reason is not None:
                ends[chunk.index] = chunk
        completions = []
        for i, end in enumerate(ends):
            if end is None or end.finish_reason is None:
                raise RuntimeError(f"the backend never finished sample {i}")
            completions.append(
                Completion(
                    i,
                    "".join(texts[i]),
                    tuple(tokens[i]),
                    tuple(logprobs[i]),
                    end.finish_reason,
                    end.weights_version,
                )
            )
        return GenerationResult(
            prepared.request_id,
            prepared.prompt_token_ids,
            tuple(completions),
            prepared.params.seed,
        )

    async def update_weights(self, update: WeightsUpdate, version: int | None = None) -> UpdateResult:
        """Applies new weights once running generations are done; ``version`` (default: the
        current one plus one) must be newer than the served version."""
        _check_update(update)
        source = _source_name(update)
        async with self._gate.update():
            previous = self._gate.version
            new = previous + 1 if version is None else version
            if new <= previous:
                raise FailedPrecondition(f"weights version {new} is not newer than the served version {previous}")
            started = time.perf_counter()
            loaded = await self._backend.update(update, new)
            seconds = time.perf_counter() - started
            self._gate.version = new
        metrics.WEIGHTS_VERSION.set(new)
        metrics.WEIGHT_UPDATES.labels(source).inc()
        metrics.WEIGHT_UPDATE_SECONDS.observe(seconds)
        log.info(
            "weights updated",
            source=source,
            previous_version=previous,
            version=new,
            tensors=loaded,
            seconds=seconds,
        )
        return UpdateResult(previous, new, loaded, seconds)

    async def close(self) -> None:
        await self._backend.close()


def _check_update(update: WeightsUpdate) -> None:
    if isinstance(update, TensorsUpdate):
        if not update.tensors:
            raise InvalidArgument("the update holds no tensors")
        return
    directory = update.directory
    if not directory.is_dir():
        raise InvalidArgument(f"not a directory on the server: {directory}")
    if isinstance(update, CheckpointUpdate) and not any(directory.glob("*.safetensors")):
        raise InvalidArgument(f"no *.safetensors files in {directory}")
    if isinstance(update, LoraUpdate) and not (directory / "adapter_config.json").is_file():
        raise InvalidArgument(f"no adapter_config.json in {directory}: not a peft LoRA adapter")


def open_engine(settings: PolicySettings) -> PolicyEngine:
    """Loads the configured model (or the embedded default) into the configured backend."""
    name = resolve_backend_name(settings.backend)
    if settings.model is None:
        model_dir, model_name = ensure_default_model(settings.cache_dir), MODEL_NAME
    elif (settings.model / "config.json").is_file():
        model_dir, model_name = settings.model, str(settings.model)
    else:
        raise InvalidArgument(f"not a Hugging Face model directory (no config.json): {settings.model}")
    os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers reads it: never reach a model hub
    from transformers import AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # progress bars would break JSON logs
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    backend = open_backend(name, model_dir, tokenizer, settings)
    log.info("model loaded", model=model_name, **asdict(backend.info()))
    return PolicyEngine(backend, tokenizer, model_name, settings)
