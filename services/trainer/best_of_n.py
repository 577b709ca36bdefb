"""Best-of-N sampling into SFT data, and the evaluation of a policy over a split.

Beyond TritonRL alternates RL with supervised rounds on the policy's own best answers: for
each task sample N=10 single-turn completions, judge them in the sandbox and keep the K=3
correct ones with the highest reward as new SFT data (services/trainer/sft.py reads it).
Only correct samples are kept: an incorrect or hacking kernel taught by imitation is worse
than none. The same sampling and judging, without selection, measures a policy: correctness
rate and mean reward per task over a split, greedy or sampled, the before/after numbers of
a training run.

A sample's prompt is exactly the first turn of an RL rollout (``turn_messages``), and its
judgement comes from the same ``SandboxEnvironment``, so the numbers here and the rewards
seen in training mean the same thing.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator
from tqdm import tqdm

from drkernel.sections import SecuritySettings
from drkernel.v1 import policy_pb2
from services.policy.client import PolicyClient
from services.policy.prompting import ExtractionError, extract_code
from services.policy.types import ChatMessage
from services.sandbox.client import SandboxClient
from services.sandbox.settings import RewardSettings
from services.trainer.environments import Environment, SandboxEnvironment, Task
from services.trainer.rollout import sample_seed, turn_messages
from services.trainer.run_config import RolloutSettings
from services.trainer.sft import SftExample, write_sft_jsonl


class SamplingSettings(BaseModel):
    """How completions are drawn and judged, for best-of-N and for evaluations."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    samples: int = Field(10, ge=1, description="Completions per task (best-of-N: N = 10).")
    temperature: float = Field(1.0, ge=0, description="Sampling temperature; 0 is greedy (then samples must be 1).")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus mass; 1 is off.")
    max_tokens: int = Field(2048, ge=1, description="Most tokens per completion.")
    seed: int = Field(0, ge=0, description="Seeds every task's generation request (reproducible samples).")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="Where candidates run.")
    correctness_profile: Literal["strict", "kernelgym", "kernelbench"] = Field(
        "strict", description="The sandbox's correctness profile for every evaluation."
    )
    skip_timing: bool = Field(False, description="Correctness only (CPU); speedup then counts 0.")
    evaluation_timeout_seconds: float = Field(300.0, gt=0, description="Per sandbox evaluation.")
    generation_concurrency: int = Field(8, ge=1, description="Generate requests in flight at once.")
    evaluation_concurrency: int = Field(8, ge=1, description="Sandbox evaluations in flight at once.")

    @model_validator(mode="after")
    def _greedy_is_one_sample(self) -> SamplingSettings:
        if self.temperature == 0 and self.samples != 1:
            raise ValueError("temperature 0 (greedy) gives the same completion every time: set samples to 1")
        return self

    @classmethod
    def from_rollout(cls, rollout: RolloutSettings, samples: int, seed: int = 0) -> SamplingSettings:
        """A run config's sampling and evaluation options with ``samples`` per task (the
        best-of-N pass of an RL run samples and judges as its rollouts do)."""
        return cls(
            samples=samples,
            temperature=rollout.temperature,
            top_p=rollout.top_p,
            max_tokens=rollout.max_tokens,
            seed=seed,
            device=rollout.device,
            correctness_profile=rollout.correctness_profile,
            skip_timing=rollout.skip_timing,
            evaluation_timeout_seconds=rollout.evaluation_timeout_seconds,
            generation_concurrency=rollout.generation_concurrency,
            evaluation_concurrency=rollout.evaluation_concurrency,
        )

    def rollout(self) -> RolloutSettings:
        """The evaluation options in the shape SandboxEnvironment reads them."""
        return RolloutSettings(
            samples_per_task=self.samples,
            turns=1,
            max_tokens=self.max_tokens,
            evaluation_timeout_seconds=self.evaluation_timeout_seconds,
            correctness_profile=self.correctness_profile,
            device=self.device,
            skip_timing=self.skip_timing,
            generation_concurrency=self.generation_concurrency,
            evaluation_concurrency=self.evaluation_concurrency,
        )


class Generator(Protocol):
    """What sampling needs of a policy: PolicyClient's generate."""

    async def generate(
        self, messages: Sequence[ChatMessage], sampling: policy_pb2.SamplingParams, request_id: str = ""
    ) -> policy_pb2.GenerateResponse: ...


@dataclass(frozen=True)
class JudgedSample:
    """One completion for one task and its judgement; ``code`` is the extracted ModelNew
    module (None when the completion has none)."""

    task: Task
    index: int
    text: str
    code: str | None
    reward: float
    verdict: str
    correct: bool
    hacked: bool
    speedup: float
    completion_tokens: int
    feedback: str = ""  # the judge's words on it (its error, when not correct)


async def sample_judged(
    tasks: Sequence[Task],
    policy: Generator,
    environment: Environment,
    settings: SamplingSettings,
    progress: bool = False,
) -> list[JudgedSample]:
    """``settings.samples`` completions per task (one generate request each, every task in
    flight at once, bounded by the clients), each judged by ``environment``; in task order,
    then sample order."""
    bar = tqdm(
        total=len(tasks) * settings.samples, desc="sampling", unit="sample", file=sys.stderr, disable=not progress
    )

    async def judged(task: Task, index: int, completion: policy_pb2.Completion) -> JudgedSample:
        judgement = await environment.judge(task, completion.text, completion.token_ids)
        try:
            code: str | None = extract_code(completion.text)
        except ExtractionError:
            code = None
        bar.update(1)
        return JudgedSample(
            task=task,
            index=index,
            text=completion.text,
            code=code,
            reward=judgement.reward,
            verdict=judgement.verdict,
            correct=judgement.correct,
            hacked=judgement.hacked,
            speedup=judgement.speedup,
            completion_tokens=len(completion.token_ids),
            feedback=judgement.feedback,
        )

    async def one(task: Task) -> list[JudgedSample]:
        sampling = policy_pb2.SamplingParams(
            n=settings.samples,
            temperature=settings.temperature,
            top_p=settings.top_p,
            max_tokens=settings.max_tokens,
            seed=sample_seed(settings.seed, "best-of-n", task.name),
        )
        response = await policy.generate(turn_messages(task, (), 0), sampling, f"{task.name}/best-of-n")
        return list(await asyncio.gather(*(judged(task, i, c) for i, c in enumerate(response.completions))))

    try:
        groups = await asyncio.gather(*(one(task) for task in tasks))
    finally:
        bar.close()
    return [sample for group in groups for sample in group]


def select_best(samples: Sequence[JudgedSample], keep: int) -> list[JudgedSample]:
    """Per task (in the order tasks first appear), the ``keep`` correct, non-hacked samples of
    highest reward, best first (ties: lower sample index first); a module already kept for
    the task is not kept twice, so K rows are K different solutions."""
    by_task: dict[str, list[JudgedSample]] = {}
    for sample in samples:
        by_task.setdefault(sample.task.name, []).append(sample)
    kept: list[JudgedSample] = []
    for group in by_task.values():
        chosen: dict[str, JudgedSample] = {}  # by module text; insertion order is rank order
        for sample in sorted(group, key=lambda s: (-s.reward, s.index)):
            if sample.correct and not sample.hacked and sample.code is not None and len(chosen) < keep:
                chosen.setdefault(sample.code.strip(), sample)
        kept.extend(chosen.values())
    return kept


class TaskEvaluation(BaseModel):
    """One task's numbers over its samples."""

    task: str
    samples: int
    correct: int
    hacked: int
    correct_rate: float
    mean_reward: float
    best_reward: float
    verdicts: dict[str, int] = Field(description="How many samples got each verdict.")


class EvaluationReport(BaseModel):
    """A policy's numbers over a split: per task, pooled over every sample, and the share of
    tasks with at least one correct sample."""

    tasks: list[TaskEvaluation]
    samples: int
    correct_rate: float
    hacked_rate: float
    mean_reward: float
    solved_rate: float = Field(description="Share of tasks with at least one correct sample.")
    settings: SamplingSettings

    def table(self) -> str:
        """Per-task rows and the totals, as plain text."""
        header = f"{'task':<40} {'samples':>7} {'correct':>8} {'reward':>7} {'best':>6}  verdicts"
        lines = [header, "-" * len(header)]
        for t in self.tasks:
            verdicts = ", ".join(f"{name} {count}" for name, count in sorted(t.verdicts.items()))
            lines.append(
                f"{t.task:<40} {t.samples:>7} {t.correct_rate:>8.1%} {t.mean_reward:>7.3f} "
                f"{t.best_reward:>6.3f}  {verdicts}"
            )
        lines.append(
            f"{'all':<40} {self.samples:>7} {self.correct_rate:>8.1%} {self.mean_reward:>7.3f} "
            f"{'':>6}  solved {self.solved_rate:.1%} of {len(self.tasks)} tasks, hacked {self.hacked_rate:.1%}"
        )
        return "\n".join(lines)


def summarize(samples: Sequence[JudgedSample], settings: SamplingSettings) -> EvaluationReport:
    """The report of judged samples (tasks in the order they first appear)."""
    by_task: dict[str, list[JudgedSample]] = {}
    for sample in samples:
        by_task.setdefault(sample.task.name, []).append(sample)
    rows = [
        TaskEvaluation(
            task=name,
            samples=len(group),
            correct=sum(s.correct for s in group),
            hacked=sum(s.hacked for s in group),
            correct_rate=sum(s.correct for s in group) / len(group),
            mean_reward=sum(s.reward for s in group) / len(group),
            best_reward=max(s.reward for s in group),
            verdicts=dict(Counter(s.verdict for s in group)),
        )
        for name, group in by_task.items()
    ]
    total = max(len(samples), 1)
    return EvaluationReport(
        tasks=rows,
        samples=len(samples),
        correct_rate=sum(s.correct for s in samples) / total,
        hacked_rate=sum(s.hacked for s in samples) / total,
        mean_reward=sum(s.reward for s in samples) / total,
        solved_rate=sum(t.correct > 0 for t in rows) / max(len(rows), 1),
        settings=settings,
    )


def comparison_table(before: EvaluationReport, after: EvaluationReport) -> str:
    """Before/after a training run, task by task (tasks of ``after``), then the totals."""
    earlier = {t.task: t for t in before.tasks}
    header = f"{'task':<40} {'correct before':>14} {'after':>7} {'reward before':>13} {'after':>7}"
    lines = [header, "-" * len(header)]
    for t in after.tasks:
        old = earlier.get(t.task)
        correct = f"{old.correct_rate:>14.1%}" if old else f"{'-':>14}"
        reward = f"{old.mean_reward:>13.3f}" if old else f"{'-':>13}"
        lines.append(f"{t.task:<40} {correct} {t.correct_rate:>7.1%} {reward} {t.mean_reward:>7.3f}")
    lines.append(
        f"{'all':<40} {before.correct_rate:>14.1%} {after.correct_rate:>7.1%} "
        f"{before.mean_reward:>13.3f} {after.mean_reward:>7.3f}"
    )
    lines.append(f"{'solved tasks':<40} {before.solved_rate:>14.1%} {after.solved_rate:>7.1%}")
    return "\n".join(lines)


class BestOfNResult(BaseModel):
    """What a best-of-N pass produced: the JSONL written and the numbers behind it."""

    path: Path
    rows: int = Field(description="Lines written (correct samples kept).")
    tasks_with_rows: int
    evaluation: EvaluationReport = Field(description="The sampled policy's numbers over the same samples.")


def write_selected(out: Path, kept: Sequence[JudgedSample]) -> int:
    """Writes selected samples as SFT JSONL (the solution is the extracted module, the reward
    rides along); returns the number of lines."""
    return write_sft_jsonl(out, (SftExample(s.task.name, s.task.source, s.code or "", s.reward) for s in kept))


def sandbox_environment(
    client: SandboxClient, settings: SamplingSettings, reward: RewardSettings | None = None
) -> SandboxEnvironment:
    """The environment that judges samples: the sandbox with these evaluation options and
    reward function."""
    return SandboxEnvironment(client, settings.rollout(), reward or RewardSettings())


async def _with_clients(
    tasks: Sequence[Task],
    settings: SamplingSettings,
    policy_address: str,
    sandbox_address: str,
    reward: RewardSettings | None,
    progress: bool,
    security: SecuritySettings,
) -> list[JudgedSample]:
    policy = PolicyClient(policy_address, settings.generation_concurrency, security=security)
    sandbox = SandboxClient(sandbox_address, settings.evaluation_concurrency, security=security)
    try:
        return await sample_judged(tasks, policy, sandbox_environment(sandbox, settings, reward), settings, progress)
    finally:
        await policy.close()
        await sandbox.close()


async def best_of_n(
    tasks: Sequence[Task],
    out: Path,
    policy_address: str,
    sandbox_address: str,
    settings: SamplingSettings = SamplingSettings(),
    keep: int = 3,
    reward: RewardSettings | None = None,
    progress: bool = True,
    *,
    security: SecuritySettings,
) -> BestOfNResult:
    """Samples ``settings.samples`` completions per task from the policy server, judges them
    in the sandbox and writes the ``keep`` best correct ones per task to ``out`` as SFT JSONL
    (task, reference, solution = the extracted module, reward), best first within a task."""
    if keep < 1:
        raise ValueError("keep must be at least 1")
    samples = await _with_clients(tasks, settings, policy_address, sandbox_address, reward, progress, security)
    kept = select_best(samples, keep)
    rows = write_selected(out, kept)
    return BestOfNResult(
        path=out,
        rows=rows,
        tasks_with_rows=len({s.task.name for s in kept}),
        evaluation=summarize(samples, settings),
    )


async def evaluate_policy(
    tasks: Sequence[Task],
    policy_address: str,
    sandbox_address: str,
    settings: SamplingSettings = SamplingSettings(samples=1, temperature=0.0),
    reward: RewardSettings | None = None,
    progress: bool = True,
    *,
    security: SecuritySettings,
    samples_out: Path | None = None,
) -> EvaluationReport:
    """Correctness rate and mean reward per task (and pooled) of the policy server's model
    over ``tasks``, ``settings.samples`` samples each (greedy by default); with
    ``samples_out``, every sample as a JSON line too (what it wrote and what the judge said:
    the numbers alone do not tell why a model fails)."""
    samples = await _with_clients(tasks, settings, policy_address, sandbox_address, reward, progress, security)
    if samples_out is not None:
        write_samples(samples_out, samples)
    return summarize(samples, settings)


def write_samples(path: Path, samples: Sequence[JudgedSample]) -> None:
    """One JSON object per sample: task, index, verdict, reward, correct, hacked, completion
    tokens, the judge's feedback and the completion's text."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as file:
        for s in samples:
            row = {
                "task": s.task.name,
                "index": s.index,
                "verdict": s.verdict,
                "reward": s.reward,
                "correct": s.correct,
                "hacked": s.hacked,
                "completion_tokens": s.completion_tokens,
                "feedback": s.feedback,
                "text": s.text,
            }
            file.write(json.dumps(row) + "\n")
