"""The whole training loop learns: rollouts through a real policy server (tiny random Qwen2 on
loopback), TRLOO advantages, MRS, the learner's PPO update and the weight sync after every
step, the same code path as real runs. The reward is the share of completion tokens in a fixed
target set (the ``token_target`` environment): the quarter of the vocabulary whose output
embeddings point most along one random direction, so that a policy-gradient step can raise all
of their probabilities together (a random set of tokens shares no direction and moves too
slowly for a test). The control run is the same seed with a learning rate of 0, so the weights
never move.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file

from services.trainer.loop import train
from services.trainer.run_config import RunConfig

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # a real RL run

STEPS = 12


@pytest.fixture(scope="module")
def peaked_policy_dir(tiny_policy_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny policy with its output embeddings scaled up tenfold: a random model at the usual
    init scale samples nearly uniformly from 49k tokens, and no handful of steps moves that."""
    directory = tmp_path_factory.mktemp("peaked-policy")
    for path in tiny_policy_dir.iterdir():
        if path.is_file() and path.suffix != ".safetensors":
            shutil.copy2(path, directory / path.name)
    weights = load_file(str(tiny_policy_dir / "model.safetensors"))
    weights["lm_head.weight"] = weights["lm_head.weight"] * 10
    save_file(weights, str(directory / "model.safetensors"), metadata={"format": "pt"})
    return directory


def aligned_tokens(model_dir: Path) -> list[int]:
    """The quarter of the vocabulary whose lm_head rows have the largest projection on a fixed
    random direction."""
    head = load_file(str(model_dir / "model.safetensors"))["lm_head.weight"].float()
    direction = torch.randn(head.shape[1], generator=torch.Generator().manual_seed(0))
    return (head @ direction).topk(head.shape[0] // 4).indices.tolist()


def config(model_dir: Path, lr: float, sync: str = "shared_path") -> RunConfig:
    return RunConfig.model_validate(
        {
            "name": "learning-test",
            "seed": 0,
            "steps": STEPS,
            "model": str(model_dir),
            "tasks": {"train": ["l1_relu", "l1_gelu"]},
            "environment": {"kind": "token_target", "target_token_ids": aligned_tokens(model_dir)},
            "rollout": {
                "tasks_per_step": 2,
                "samples_per_task": 6,
                "turns": 2,
                "max_tokens": 8,
                "history_turns": 1,
                "device": "cpu",
            },
            "prs": {"enabled": False},  # PRS weighs kernel coverage; this reward has none
            # unscaled loss: the recipe's 1/1000 puts a tiny model's gradients near AdamW's epsilon
            "loss": {"scale": 1.0},
            "optim": {"lr": lr, "micro_batch_rows": 8},
            "sync": {"mode": sync},
            "checkpoint": {"every_steps": STEPS, "export_hf": False},
        }
    )


def metrics(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_reward_rises_above_a_run_that_does_not_update(peaked_policy_dir: Path, tmp_path: Path) -> None:
    assert train(config(peaked_policy_dir, lr=2e-2), tmp_path / "trained", progress=False) == STEPS
    assert train(config(peaked_policy_dir, lr=0.0), tmp_path / "control", progress=False) == STEPS
    trained, control = metrics(tmp_path / "trained"), metrics(tmp_path / "control")

    def late(rows: list[dict[str, Any]]) -> float:
        return sum(r["reward_mean"] for r in rows[-4:]) / 4

    assert trained[0]["reward_mean"] == pytest.approx(control[0]["reward_mean"])  # same seed, same start
    assert late(trained) > late(control) + 0.15, (late(trained), late(control))
    # policy server and learner run the same weights on the same backend: no mismatch to reject
    assert max(r["logprob_mismatch"] for r in trained) < 1e-3
    assert all(r["mrs_rejected_rate"] == 0 for r in trained)
    assert [r["weights_version"] for r in trained] == list(range(1, STEPS + 1))
