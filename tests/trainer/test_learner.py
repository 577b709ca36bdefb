"""The learner on one CPU process with a tiny random Qwen2: log-probs, updates, LoRA, export."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from services.policy.transformers_backend import read_checkpoint
from services.trainer.learner import Learner
from tests.policy.helpers import forward_logprobs

from .learner_helpers import build_tiny_model, make_config, make_rows, max_difference, parameters

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def tied_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = build_tiny_model(tmp_path_factory.mktemp("tiny-tied"), seed=1, tied=True)
    (directory / "tokenizer_config.json").write_text('{"model_max_length": 256}')
    return directory


def test_logprobs_match_a_separate_forward_pass(model_dir: Path):
    config = make_config(optim={"micro_batch_rows": 2}, rollout={"temperature": 0.7})
    learner = Learner(config, model_dir, CPU)
    rows = make_rows(5)
    reference = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    for row, got in zip(rows, learner.logprobs(rows), strict=True):
        expected = forward_logprobs(reference, row.prompt_ids, row.completion_ids, temperature=0.7)
        assert len(got) == len(row.completion_ids)
        assert torch.allclose(torch.tensor(got), expected, atol=1e-5)


@pytest.mark.slow
def test_advantage_sign_moves_the_row_log_prob(model_dir: Path):
    learner = Learner(make_config(optim={"lr": 1e-2}), model_dir, CPU)
    base = make_rows(2, seed=3)
    rows = [replace(base[0], advantage=1.0), replace(base[1], advantage=-1.0)]
    before = learner.logprobs(rows)
    stats = learner.update(rows, before)
    after = learner.logprobs(rows)
    assert sum(after[0]) > sum(before[0])
    assert sum(after[1]) < sum(before[1])
    tokens = [len(r.completion_ids) for r in rows]
    # on-policy (r = 1): loss = 1e-3 * sum(-A * tokens) / rows
    assert stats.loss == pytest.approx(1e-3 * (-tokens[0] + tokens[1]) / 2, rel=1e-4)
    assert (stats.rows, stats.tokens, stats.optimizer_steps) == (2, sum(tokens), 1)
    assert stats.clip_fraction == 0.0 and stats.grad_norm > 0


def test_masked_rows_leave_the_weights_unchanged(model_dir: Path):
    learner = Learner(make_config(optim={"weight_decay": 0.1}), model_dir, CPU)
    rows = [replace(row, keep=False) for row in make_rows(3)]
    before = parameters(learner.model)
    stats = learner.update(rows, learner.logprobs(rows))
    assert max_difference(before, parameters(learner.model)) == 0.0
    assert (stats.rows, stats.tokens, stats.loss) == (0, 0, 0.0)


def test_masked_rows_count_in_the_denominator(model_dir: Path):
    learner = Learner(make_config(), model_dir, CPU)
    row = make_rows(1, seed=5)[0]
    alone = learner.update([row], learner.logprobs([row])).loss
    learner = Learner(make_config(), model_dir, CPU)
    rows = [row, replace(row, keep=False)]
    assert learner.update(rows, learner.logprobs(rows)).loss == pytest.approx(alone / 2, rel=1e-5)


def test_micro_batch_size_does_not_change_the_update(model_dir: Path):
    rows = make_rows(7, seed=2, masked=(4,))
    weights = []
    for micro in (1, 3, 8):
        learner = Learner(make_config(optim={"lr": 1e-4, "micro_batch_rows": micro}), model_dir, CPU)
        learner.update(rows, learner.logprobs(rows))
        weights.append(parameters(learner.model))
    assert max_difference(weights[0], weights[1]) < 1e-6
    assert max_difference(weights[0], weights[2]) < 1e-6


def test_updates_per_step_takes_that_many_optimizer_steps(model_dir: Path):
    config = make_config(optim={"updates_per_step": 2, "warmup_steps": 4})
    learner = Learner(config, model_dir, CPU)
    rows = make_rows(5)
    stats = learner.update(rows, learner.logprobs(rows))
    assert stats.optimizer_steps == 2
    assert stats.lr == pytest.approx(1e-3 * 2 / 4)  # the second step of a 4-step warm-up
    assert learner.scheduler.get_last_lr()[0] == pytest.approx(1e-3 * 3 / 4)


def test_update_rejects_misaligned_log_probs(model_dir: Path):
    learner = Learner(make_config(), model_dir, CPU)
    rows = make_rows(2)
    with pytest.raises(ValueError, match="old_logprobs"):
        learner.update(rows, [[0.0], [0.0]])


def test_lora_trains_only_adapters_and_merges_like_peft(model_dir: Path):
    config = make_config(lora={"enabled": True, "rank": 4, "alpha": 8})
    learner = Learner(config, model_dir, CPU)
    rows = make_rows(4)
    before = parameters(learner.model)
    learner.update(rows, learner.logprobs(rows))
    after = parameters(learner.model)
    changed = {name for name in before if not torch.equal(before[name], after[name])}
    assert changed and all(".lora_" in name for name in changed)
    assert any(".lora_B." in name for name in changed)

    merged = learner.full_state_dict()
    assert merged is not None
    expected = copy.deepcopy(learner.model).merge_and_unload().state_dict()
    assert merged.keys() == expected.keys()
    assert max_difference(merged, expected) < 1e-6
    assert max_difference(merged, dict(read_checkpoint(model_dir))) > 0  # the adapters count


def test_full_state_dict_is_a_snapshot_named_like_the_base_model(model_dir: Path):
    learner = Learner(make_config(), model_dir, CPU)
    snapshot = learner.full_state_dict()
    assert snapshot is not None
    assert snapshot.keys() == read_checkpoint(model_dir).keys()
    assert "model.layers.0.self_attn.q_proj.weight" in snapshot
    frozen = {name: t.clone() for name, t in snapshot.items()}
    rows = make_rows(3)
    learner.update(rows, learner.logprobs(rows))
    assert max_difference(snapshot, frozen) == 0.0  # later updates do not leak in


def test_export_hf_loads_back_with_the_same_logits(tied_model_dir: Path, tmp_path: Path):
    learner = Learner(make_config(), tied_model_dir, CPU)
    rows = make_rows(3)
    learner.update(rows, learner.logprobs(rows))
    learner.export_hf(tmp_path / "hf")
    files = {p.name for p in (tmp_path / "hf").iterdir()}
    assert {"model.safetensors", "config.json", "generation_config.json", "tokenizer_config.json"} <= files
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["dtype"] == "float32"
    assert "lm_head.weight" not in read_checkpoint(tmp_path / "hf")  # tied to the embeddings

    loaded = AutoModelForCausalLM.from_pretrained(tmp_path / "hf", dtype=torch.float32).eval()
    learner.model.eval()
    ids = torch.tensor([rows[0].prompt_ids + rows[0].completion_ids])
    with torch.no_grad():
        assert torch.allclose(loaded(ids).logits, learner.model(ids).logits, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("lora", [False, True])
def test_reference_logprobs_stay_those_of_the_initial_weights(model_dir: Path, lora: bool):
    config = make_config(optim={"lr": 1e-2}, loss={"kl_coef": 0.1}, lora={"enabled": lora, "rank": 4})
    learner = Learner(config, model_dir, CPU)
    rows = [replace(row, advantage=1.0) for row in make_rows(3, seed=5)]
    initial = learner.logprobs(rows)
    first = learner.update(rows, initial, learner.reference_logprobs(rows))
    assert first.kl == pytest.approx(0.0, abs=1e-7)  # policy == reference before any step

    def gap(a: list[list[float]], b: list[list[float]]) -> float:
        return max(abs(x - y) for u, v in zip(a, b, strict=True) for x, y in zip(u, v, strict=True))

    moved = learner.logprobs(rows)
    assert gap(moved, initial) > 1e-3
    assert gap(learner.reference_logprobs(rows), initial) < 1e-6
    assert learner.update(rows, moved, learner.reference_logprobs(rows)).kl > 0
