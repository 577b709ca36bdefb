"""Checkpoints: a resumed learner continues exactly; interrupted saves never look complete."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed.checkpoint as dcp

from services.trainer.checkpoint import latest_checkpoint, prune_checkpoints
from services.trainer.learner import Learner

from .learner_helpers import build_tiny_model, make_config, make_rows, max_difference, parameters

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


def _optimizer_state(learner: Learner) -> list[tuple[str, torch.Tensor]]:
    return [
        (key, value.clone())
        for state in learner.optimizer.state_dict()["state"].values()
        for key, value in sorted(state.items())
    ]


@pytest.mark.slow
@pytest.mark.parametrize("lora", [False, True])
def test_resume_restores_weights_optimizer_rng_and_the_next_update(model_dir: Path, tmp_path: Path, lora: bool):
    config = make_config(optim={"warmup_steps": 3, "weight_decay": 0.01}, lora={"enabled": lora, "rank": 4})
    rows = make_rows(4)
    learner = Learner(config, model_dir, CPU)
    for _ in range(2):
        learner.update(rows, learner.logprobs(rows))
    extra = {"step": 2, "sampler": {"cursor": 7}, "prs_rng": random.Random(1).getstate()}
    learner.save_checkpoint(tmp_path / "step_2", extra)
    saved_keys = dcp.FileSystemReader(tmp_path / "step_2" / "dcp").read_metadata().state_dict_metadata
    assert any(".lora_B." in key for key in saved_keys) == lora
    assert not any(".base_layer." in key for key in saved_keys)  # frozen weights stay out
    draws = (torch.rand(3), random.random(), np.random.rand())
    saved, saved_optimizer = parameters(learner.model), _optimizer_state(learner)
    next_stats = learner.update(rows, learner.logprobs(rows))
    next_weights = parameters(learner.model)

    resumed = Learner(config, model_dir, CPU)
    loaded = resumed.load_checkpoint(tmp_path / "step_2")
    assert loaded["step"] == 2 and loaded["sampler"] == {"cursor": 7}
    version, internal, gauss = loaded["prs_rng"]  # JSON turned its tuples into lists
    restored = random.Random()
    restored.setstate((version, tuple(internal), gauss))
    assert restored.random() == random.Random(1).random()
    assert (torch.rand(3).tolist(), random.random(), np.random.rand()) == (draws[0].tolist(), *draws[1:])
    assert max_difference(saved, parameters(resumed.model)) == 0.0
    resumed_optimizer = _optimizer_state(resumed)
    assert [k for k, _ in resumed_optimizer] == [k for k, _ in saved_optimizer]
    assert all(torch.equal(a, b) for (_, a), (_, b) in zip(saved_optimizer, resumed_optimizer, strict=True))
    assert resumed.scheduler.last_epoch == 2
    stats = resumed.update(rows, resumed.logprobs(rows))
    assert stats.lr == next_stats.lr and stats.loss == pytest.approx(next_stats.loss, rel=1e-6)
    assert max_difference(next_weights, parameters(resumed.model)) < 1e-7


def _fake_checkpoint(root: Path, step: int) -> Path:
    directory = root / f"step_{step}"
    directory.mkdir(parents=True)
    (directory / "extra.json").write_text(f'{{"step": {step}}}')
    return directory


def test_latest_ignores_interrupted_saves_and_prune_keeps_the_newest(tmp_path: Path):
    assert latest_checkpoint(tmp_path / "missing") is None
    for step in (2, 10, 4):
        _fake_checkpoint(tmp_path, step)
    (tmp_path / ".step_12.partial" / "dcp").mkdir(parents=True)  # killed mid-save
    (tmp_path / "step_11").mkdir()  # no extra.json: not a checkpoint
    assert latest_checkpoint(tmp_path) == tmp_path / "step_10"
    prune_checkpoints(tmp_path, keep=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_10", "step_11", "step_4"]


def test_a_save_killed_before_publishing_leaves_the_previous_checkpoint_latest(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    learner = Learner(make_config(), model_dir, CPU)
    learner.save_checkpoint(tmp_path / "step_1", {"step": 1})

    def killed(*args: object) -> None:
        raise KeyboardInterrupt  # stands in for SIGKILL between writing and publishing

    monkeypatch.setattr("services.trainer.checkpoint.publish", killed)
    with pytest.raises(KeyboardInterrupt):
        learner.save_checkpoint(tmp_path / "step_2", {"step": 2})
    assert (tmp_path / ".step_2.partial" / "extra.json").exists()
    assert latest_checkpoint(tmp_path) == tmp_path / "step_1"
    monkeypatch.undo()
    learner.save_checkpoint(tmp_path / "step_2", {"step": 2})  # a later save still works
    assert latest_checkpoint(tmp_path) == tmp_path / "step_2"
    assert not (tmp_path / ".step_2.partial").exists()
