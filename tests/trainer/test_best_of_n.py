"""Best-of-N and evaluation: the selection rule on hand-made judgements, the sandbox's real
verdicts on canned completions (correct, wrong, hacking, no code) deciding what is kept, and
the whole pipeline against a real policy server (tiny random model) and the real sandbox."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from drkernel.sections import SecuritySettings, ServerSettings
from drkernel.v1 import policy_pb2
from services.policy.settings import PolicySettings, TransformersSettings
from services.policy.types import ChatMessage
from services.sandbox.client import SandboxClient
from services.sandbox.settings import RewardSettings
from services.sandbox.tasks import EXAMPLES_DIR, builtin_task
from services.trainer.best_of_n import (
    JudgedSample,
    SamplingSettings,
    best_of_n,
    comparison_table,
    evaluate_policy,
    sample_judged,
    sandbox_environment,
    select_best,
    summarize,
    write_selected,
)
from services.trainer.environments import Task
from services.trainer.rollout import turn_messages
from services.trainer.run_config import RolloutSettings
from services.trainer.sft import read_sft_jsonl

RELU = Task("l1_relu", builtin_task("l1_relu").source())
GELU = Task("l1_gelu", builtin_task("l1_gelu").source())

SHORT_RELU = """import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < n)
    tl.store(out_ptr + i, tl.where(x < 0, 0.0, x), mask=i < n)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
"""
COPY = SHORT_RELU.replace("tl.where(x < 0, 0.0, x)", "x")  # forgets the ReLU: incorrect
TORCH_ONLY = (EXAMPLES_DIR / "relu_torch_only.py").read_text()  # no kernel: a hack


def sample(
    task: str, index: int, reward: float, correct: bool = True, code: str = "", hacked: bool = False
) -> JudgedSample:
    """A judged sample; its module is unique to it unless ``code`` is given."""
    return JudgedSample(
        task=Task(task, f"# {task}"),
        index=index,
        text="...",
        code=code or f"# {task} {index}",
        reward=reward,
        verdict="CORRECT" if correct else ("HACKED" if hacked else "INCORRECT"),
        correct=correct,
        hacked=hacked,
        speedup=0.0,
        completion_tokens=10,
    )


def test_selection_keeps_the_best_correct_distinct_samples_per_task() -> None:
    samples = [
        sample("a", 0, 0.6),
        sample("a", 1, 0.0, correct=False),
        sample("a", 2, 0.9),
        sample("a", 3, 0.9),
        sample("a", 4, 0.7),
        sample("a", 5, 1.2, correct=False, hacked=True),
        sample("a", 6, 0.8, code="# a 2"),
        sample("b", 0, 0.0, correct=False),
        replace(sample("b", 1, 0.0, correct=False), code=None),
        sample("c", 0, 0.5),
    ]
    kept = select_best(samples, keep=3)
    # a: 0.9 (index 2), 0.9 (index 3), then 0.8 is index 2's module again, so 0.7; b: none; c: one
    assert [(s.task.name, s.index) for s in kept] == [("a", 2), ("a", 3), ("a", 4), ("c", 0)]
    assert [(s.task.name, s.index) for s in select_best(samples, keep=1)] == [("a", 2), ("c", 0)]
    report = summarize(samples, SamplingSettings())
    assert [(t.task, t.samples, t.correct, t.hacked) for t in report.tasks] == [
        ("a", 7, 5, 1),
        ("b", 2, 0, 0),
        ("c", 1, 1, 0),
    ]
    assert report.tasks[0].verdicts == {"CORRECT": 5, "INCORRECT": 1, "HACKED": 1}
    assert report.tasks[0].mean_reward == pytest.approx((0.6 + 0.9 + 0.9 + 0.7 + 1.2 + 0.8) / 7)
    assert report.correct_rate == pytest.approx(6 / 10) and report.hacked_rate == pytest.approx(0.1)
    assert report.solved_rate == pytest.approx(2 / 3)


def test_settings_and_the_comparison_table() -> None:
    with pytest.raises(ValueError, match="greedy"):
        SamplingSettings(temperature=0.0, samples=10)
    rollout = RolloutSettings(max_tokens=777, temperature=0.7, device="cpu", skip_timing=True)
    settings = SamplingSettings.from_rollout(rollout, samples=10, seed=3)
    assert (settings.samples, settings.max_tokens, settings.temperature, settings.seed) == (10, 777, 0.7, 3)
    assert settings.rollout().skip_timing and settings.rollout().turns == 1
    before = summarize([sample("a", 0, 0.0, correct=False), sample("b", 0, 0.0, correct=False)], settings)
    after = summarize([sample("a", 0, 1.0), sample("b", 0, 0.0, correct=False)], settings)
    lines = comparison_table(before, after).splitlines()
    assert lines[2].split() == ["a", "0.0%", "100.0%", "0.000", "1.000"]
    assert lines[-2].split() == ["all", "0.0%", "50.0%", "0.000", "0.500"]
    assert lines[-1].split()[-2:] == ["0.0%", "50.0%"]
    assert "solved 50.0% of 2 tasks" in after.table()


class CannedPolicy:
    """Stands in for the policy server: answers every request with fixed completions and
    records what it was asked."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = texts
        self.requests: list[tuple[tuple[ChatMessage, ...], policy_pb2.SamplingParams]] = []

    async def generate(
        self, messages: Sequence[ChatMessage], sampling: policy_pb2.SamplingParams, request_id: str = ""
    ) -> policy_pb2.GenerateResponse:
        self.requests.append((tuple(messages), sampling))
        return policy_pb2.GenerateResponse(
            completions=[
                policy_pb2.Completion(index=i, text=text, token_ids=[7] * (i + 1))
                for i, text in enumerate(self.texts[: sampling.n])
            ]
        )


def answer(code: str) -> str:
    return f"Here is the kernel.\n\n```python\n{code.strip()}\n```"


@pytest.mark.slow
def test_the_sandbox_decides_what_is_kept(sandbox: Any, background_loop: Any) -> None:
    texts = [answer(COPY), answer(SHORT_RELU), "I would rather not.", answer(TORCH_ONLY)]
    policy = CannedPolicy(texts)
    settings = SamplingSettings(samples=4, device="cpu", skip_timing=True, seed=5)

    async def run() -> list[JudgedSample]:
        client = SandboxClient(sandbox.address, concurrency=4, security=SecuritySettings())
        try:
            return await sample_judged(
                [RELU], policy, sandbox_environment(client, settings, RewardSettings()), settings
            )
        finally:
            await client.close()

    samples = background_loop.run(run())
    assert [s.verdict for s in samples] == ["INCORRECT", "CORRECT", "NO_CODE", "HACKED"]
    assert samples[1].code == SHORT_RELU and samples[2].code is None and samples[1].reward > 0
    assert samples[3].reward == 0.0 and samples[0].reward == 0.0
    messages, sampling = policy.requests[0]
    assert messages == turn_messages(RELU, (), 0)  # exactly an RL rollout's first turn
    assert (sampling.n, sampling.max_tokens, sampling.temperature) == (4, settings.max_tokens, 1.0)
    assert [s.index for s in select_best(samples, keep=3)] == [1]  # the only correct one


@pytest.fixture(scope="module")
def policy_server(
    tiny_policy_dir: Path, background_loop: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    from services.policy.server import start_policy

    settings = PolicySettings(
        server=ServerSettings(host="127.0.0.1", port=0, metrics_port=0, metrics=False),
        backend="transformers",
        model=tiny_policy_dir,
        device="cpu",
        dtype="float32",
        max_n=4,
        transformers=TransformersSettings(max_batch_size=4),
        cache_dir=tmp_path_factory.mktemp("policy-cache"),
    )
    running = background_loop.run(start_policy(settings, SecuritySettings()))
    yield running.address
    background_loop.run(running.stop())


@pytest.mark.slow
def test_best_of_n_and_evaluation_against_a_policy_server(
    policy_server: str, sandbox: Any, background_loop: Any, tmp_path: Path
) -> None:
    settings = SamplingSettings(samples=3, max_tokens=12, device="cpu", skip_timing=True)
    out = tmp_path / "best.jsonl"
    result = background_loop.run(
        best_of_n(
            [RELU, GELU],
            out,
            policy_server,
            sandbox.address,
            settings,
            keep=2,
            progress=False,
            security=SecuritySettings(),
        )
    )
    # A random model writes no module: nothing to keep, every sample accounted for.
    assert result.rows == 0 and result.tasks_with_rows == 0 and out.read_text() == ""
    assert [(t.task, t.samples) for t in result.evaluation.tasks] == [("l1_relu", 3), ("l1_gelu", 3)]
    assert result.evaluation.correct_rate == 0.0 and result.evaluation.mean_reward == 0.0
    assert all(set(t.verdicts) == {"NO_CODE"} for t in result.evaluation.tasks)
    again = background_loop.run(
        best_of_n(
            [RELU, GELU],
            tmp_path / "again.jsonl",
            policy_server,
            sandbox.address,
            settings,
            progress=False,
            security=SecuritySettings(),
        )
    )
    assert again.evaluation == result.evaluation  # seeded: the same samples

    greedy = background_loop.run(
        evaluate_policy(
            [RELU],
            policy_server,
            sandbox.address,
            SamplingSettings(samples=1, temperature=0.0, max_tokens=12),
            progress=False,
            security=SecuritySettings(),
            samples_out=tmp_path / "samples.jsonl",
        )
    )
    assert (greedy.samples, greedy.correct_rate, greedy.solved_rate) == (1, 0.0, 0.0)
    assert greedy.tasks[0].task == "l1_relu"
    (row,) = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    # what the model wrote and why it is not correct: 12 tokens hold no ModelNew module
    assert (row["task"], row["correct"], row["completion_tokens"]) == ("l1_relu", False, 12)
    assert greedy.tasks[0].verdicts == {row["verdict"]: 1}
    assert row["text"] and row["feedback"]


def test_kept_samples_are_written_as_sft_data_best_first(tmp_path: Path) -> None:
    kept = select_best([sample("a", 0, 0.5, code="A"), sample("a", 1, 0.9, code="B"), sample("b", 0, 0.2)], keep=3)
    assert write_selected(tmp_path / "k.jsonl", kept) == 3
    rows = [json.loads(line) for line in (tmp_path / "k.jsonl").read_text().splitlines()]
    assert [(r["task"], r["reference"], r["solution"], r["reward"]) for r in rows] == [
        ("a", "# a", "B", 0.9),
        ("a", "# a", "A", 0.5),
        ("b", "# b", "# b 0", 0.2),
    ]
    assert [e.solution for e in read_sft_jsonl(tmp_path / "k.jsonl")] == ["B", "A", "# b 0"]
