"""Helpers of the learner tests: tiny random models, configs and rows; run as a module under
torchrun it is the worker of the multi-rank test (tests/trainer/test_distributed.py)."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

import torch

from services.trainer.rows import TrainingRow
from services.trainer.run_config import RunConfig

VOCAB = 1000


def build_tiny_model(directory: Path, seed: int = 0, tied: bool = False) -> Path:
    """A random 2-layer Qwen2 (vocab 1000, hidden 32) saved with ``save_pretrained``."""
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=tied,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=2, pad_token_id=0)
    model.save_pretrained(directory)
    return directory


def make_config(**sections: Any) -> RunConfig:
    """A float32 run config; ``sections`` override whole sections, e.g. optim={"lr": 1e-3}."""
    data: dict[str, Any] = {"dtype": "float32", "seed": 0, "optim": {"lr": 1e-3}}
    for name, value in sections.items():
        data[name] = {**data.get(name, {}), **value} if isinstance(value, dict) else value
    return RunConfig.model_validate(data)


def make_rows(count: int, seed: int = 0, masked: tuple[int, ...] = ()) -> list[TrainingRow]:
    """Rows of varied prompt and completion lengths with advantages in [-1, 1]."""
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        prompt = [rng.randrange(3, VOCAB) for _ in range(rng.randint(2, 9))]
        completion = [rng.randrange(3, VOCAB) for _ in range(rng.randint(1, 7))]
        rows.append(
            TrainingRow(
                prompt_ids=prompt,
                completion_ids=completion,
                sampler_logprobs=[0.0] * len(completion),
                advantage=rng.uniform(-1.0, 1.0),
                keep=index not in masked,
                trajectory=index,
                turn=0,
            )
        )
    return rows


def parameters(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Detached copies of a (single-process) model's parameters."""
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def max_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


def _worker(model_dir: Path, lora_model_dir: Path, out: Path) -> None:
    """One rank of the 2-rank test: the full fine-tuning scenario with a DCP round trip,
    then the LoRA scenario; rank 0 saves what the test compares with one process."""
    from services.trainer import distributed
    from services.trainer.learner import Learner

    rank, world, device = distributed.init_distributed()
    try:
        rows = make_rows(5, masked=(1, 3))
        config = make_config(optim={"lr": 1e-4, "micro_batch_rows": 1}, rollout={"temperature": 0.7})
        learner = Learner(config, model_dir, device)
        logprobs = learner.logprobs(rows)
        stats = learner.update(rows, logprobs)
        first = learner.full_state_dict()
        learner.save_checkpoint(out / "checkpoints" / "step_1", {"step": 1})
        stats_2 = learner.update(rows, logprobs)
        second = learner.full_state_dict()

        resumed = Learner(config, model_dir, device)
        extra = resumed.load_checkpoint(out / "checkpoints" / "step_1")
        reloaded = resumed.full_state_dict()
        resumed.update(rows, logprobs)
        resumed_second = resumed.full_state_dict()

        lora_config = make_config(optim={"lr": 1e-3, "micro_batch_rows": 2}, lora={"enabled": True, "rank": 4})
        lora = Learner(lora_config, lora_model_dir, device)
        lora.update(rows, lora.logprobs(rows))
        merged = lora.full_state_dict()
        if rank == 0:
            assert first is not None and second is not None and merged is not None
            torch.save(
                {
                    "first": first,
                    "second": second,
                    "reloaded": reloaded,
                    "resumed_second": resumed_second,
                    "merged": merged,
                },
                out / "weights.pt",
            )
            (out / "results.json").write_text(
                json.dumps(
                    {
                        "world": world,
                        "logprobs": logprobs,
                        "extra": extra,
                        "stats": stats.__dict__,
                        "stats_2": stats_2.__dict__,
                    }
                )
            )
        else:
            assert first is None and merged is None
    finally:
        distributed.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("lora_model_dir", type=Path)
    parser.add_argument("out", type=Path)
    arguments = parser.parse_args()
    _worker(arguments.model_dir, arguments.lora_model_dir, arguments.out)
