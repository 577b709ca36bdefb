"""SFT: the data (built-in and family solutions, held-out exclusion, JSONL), each example
rendered exactly as the policy sees a first turn, and training on a tiny random model with the
real tokenizer: the loss falls, and the exported directory loads and prefers the solutions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from drkernel.errors import InvalidArgument
from services.policy.chat import chat_token_ids
from services.policy.prompting import SYSTEM_PROMPT, build_messages, extract_code
from services.sandbox.tasks import builtin_tasks
from services.trainer.families import family_tasks
from services.trainer.sft import (
    ADAPTER_DIR,
    RESULT_FILE,
    SftExample,
    SftSettings,
    TokenizedExample,
    collate,
    completion_loss,
    completion_text,
    read_sft_jsonl,
    render_example,
    run_sft,
    solution_examples,
    write_sft_jsonl,
    write_solution_data,
)

REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return {expression}
"""
SOLUTION = """import torch
import triton
import triton.language as tl


@triton.jit
def {name}_kernel(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(x_ptr + i, {value}, mask=i < n)


class ModelNew(torch.nn.Module):
    pass
"""
# Short examples keep the vocabulary projection (49k tokens) cheap on a CPU.
EXAMPLES = [
    SftExample(name, REFERENCE.format(expression=expression), SOLUTION.format(name=name, value=value))
    for name, expression, value in [("relu", "torch.relu(x)", "tl.maximum(x, 0.0)"), ("neg", "-x", "-x")]
]


def test_solution_data_and_held_out_tasks(tmp_path: Path) -> None:
    every = solution_examples()
    builtin = [t for t in builtin_tasks() if t.solution]
    assert len(every) == len(builtin) + len(family_tasks())
    assert {e.task for e in every} >= {"l1_relu", "l2_gemm_bias_relu", "fam_softmax_32x1024"}
    relu = next(e for e in every if e.task == "l1_relu")
    assert relu.reference == builtin_tasks()[[t.name for t in builtin].index("l1_relu")].source()
    path = tmp_path / "data" / "sft.jsonl"
    held_out = {"l1_relu", "fam_softmax_32x1024"}
    assert write_solution_data(path, exclude=held_out) == len(every) - 2
    read = read_sft_jsonl(path)
    assert [e.task for e in read] == [e.task for e in every if e.task not in held_out]
    assert read[0] == next(e for e in every if e.task == read[0].task)
    assert [e.task for e in solution_examples(builtin=False)] == [t.name for t in family_tasks()]
    with pytest.raises(InvalidArgument, match="l1_relux"):
        solution_examples(exclude={"l1_relux"})


def test_jsonl_round_trip_and_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    rows = [EXAMPLES[0], SftExample("t", "ref", "sol", reward=0.85)]
    assert write_sft_jsonl(path, rows) == 2
    assert json.loads(path.read_text().splitlines()[1]) == {
        "task": "t",
        "reference": "ref",
        "solution": "sol",
        "reward": 0.85,
    }
    assert read_sft_jsonl(path) == rows
    path.write_text(path.read_text() + '{"task": "t", "reference": "r"}\n')
    with pytest.raises(InvalidArgument, match=r"data.jsonl:3: expected an object"):
        read_sft_jsonl(path)
    path.write_text("")
    with pytest.raises(InvalidArgument, match="no examples"):
        read_sft_jsonl(path)


def test_an_example_is_rendered_as_the_policy_sees_its_first_turn(tokenizer: Any) -> None:
    example = next(e for e in solution_examples() if e.task == "l1_softmax")
    text = completion_text(example.solution)
    assert text.startswith("`ModelNew` below does the work in the Triton kernel `softmax_kernel`")
    assert text.count("```") == 2
    assert extract_code(text) == example.solution.strip() + "\n"
    prompt, completion = render_example(tokenizer, example)
    assert prompt == chat_token_ids(tokenizer, build_messages(example.reference, (), SYSTEM_PROMPT))
    assert completion[-1] == tokenizer.eos_token_id
    assert tokenizer.decode(completion[:-1]) == text


def test_batches_are_left_padded_without_changing_the_loss(tiny_policy_dir: Path, tokenizer: Any) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_policy_dir, dtype=torch.float32)
    rows = [TokenizedExample(e.task, *render_example(tokenizer, e)) for e in EXAMPLES]
    rows[1] = TokenizedExample("short", rows[1].prompt[:-7], rows[1].completion[:-5])
    pad = tokenizer.pad_token_id
    with torch.no_grad():
        one_by_one = sum(float(completion_loss(model, collate([r], pad, torch.device("cpu")))) for r in rows)
        together = float(completion_loss(model, collate(rows, pad, torch.device("cpu"))))
    assert together == pytest.approx(one_by_one, rel=1e-5)
    batch = collate(rows, pad, torch.device("cpu"))
    assert int((batch["labels"] != -100).sum()) == sum(len(r.completion) for r in rows)


def solution_logprob(model_dir: Path, tokenizer: Any) -> float:
    """Total log-probability of every example's completion under the model in ``model_dir``."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    rows = [TokenizedExample(e.task, *render_example(tokenizer, e)) for e in EXAMPLES]
    with torch.no_grad():
        return -float(completion_loss(model, collate(rows, tokenizer.pad_token_id, torch.device("cpu"))))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sft-data") / "sft.jsonl"
    write_sft_jsonl(path, EXAMPLES)
    return path


@pytest.fixture(scope="module")
def untrained_logprob(tiny_policy_dir: Path, tokenizer: Any) -> float:
    return solution_logprob(tiny_policy_dir, tokenizer)


@pytest.mark.slow
def test_full_fine_tuning_learns_and_exports_a_loadable_model(
    data: Path, tiny_policy_dir: Path, tokenizer: Any, untrained_logprob: float, tmp_path: Path
) -> None:
    out = tmp_path / "full"
    settings = SftSettings(epochs=3, lr=1e-2, batch_size=1, lora=False, schedule="constant")
    result = run_sft(data, out, settings, tiny_policy_dir, progress=False)
    assert result.examples == 2 and result.steps == 6 and not result.skipped
    assert len(result.epoch_losses) == 3
    assert result.epoch_losses[-1] < result.epoch_losses[0] - 2.0, result.epoch_losses
    assert {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json", RESULT_FILE} <= {
        p.name for p in out.iterdir()
    }
    assert not (out / ADAPTER_DIR).exists()
    assert json.loads((out / RESULT_FILE).read_text())["epoch_losses"] == result.epoch_losses
    assert solution_logprob(out, tokenizer) > untrained_logprob + 200
    with pytest.raises(InvalidArgument, match="not empty"):
        run_sft(data, out, settings, tiny_policy_dir, progress=False)


@pytest.mark.slow
def test_lora_learns_and_exports_merged_weights_and_the_adapter(
    data: Path, tiny_policy_dir: Path, tokenizer: Any, untrained_logprob: float, tmp_path: Path
) -> None:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    out = tmp_path / "lora"
    # A random tiny model's head has tiny weights: LoRA needs it among the targets to move the
    # loss in a few steps (real models do not).
    targets = (*SftSettings().lora_target_modules, "lm_head")
    settings = SftSettings(epochs=3, lr=1e-2, batch_size=1, lora_target_modules=targets)
    result = run_sft(data, out, settings, tiny_policy_dir, progress=False)
    assert settings.lora and settings.lora_rank == 16 and settings.lora_alpha == 32
    assert result.epoch_losses[-1] < result.epoch_losses[0] - 2.0, result.epoch_losses
    assert result.trainable_parameters < 1_000_000
    assert (out / ADAPTER_DIR / "adapter_config.json").is_file()
    merged = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    base = AutoModelForCausalLM.from_pretrained(tiny_policy_dir, dtype=torch.float32)
    adapted = PeftModel.from_pretrained(base, out / ADAPTER_DIR).eval()
    ids = torch.tensor([render_example(tokenizer, EXAMPLES[0])[0]])
    with torch.no_grad():
        assert torch.allclose(merged(ids).logits, adapted(ids).logits, atol=1e-4)
    assert solution_logprob(out, tokenizer) > untrained_logprob + 200


def test_examples_longer_than_max_length_are_skipped(data: Path, tiny_policy_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="every example is longer than max_length=64"):
        run_sft(data, tmp_path / "none", SftSettings(max_length=64), tiny_policy_dir, progress=False)
    assert not (tmp_path / "none").exists()
    with pytest.raises(ValueError, match="extra"):
        SftSettings.model_validate({"epochs": 1, "learning_rate": 1e-3})
