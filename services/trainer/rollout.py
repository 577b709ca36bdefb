"""Multi-turn rollouts: the policy writes, the environment judges, the feedback goes into the
next turn's prompt.

Each trajectory runs as its own task, so one sample's evaluation overlaps the generation of
the others; the clients bound how many generations and evaluations are in flight. The first
turn of a group is one request for all n samples (same prompt); later turns differ per
sample. Each turn keeps exactly the token ids and log-probs the policy server returned.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass

from drkernel.v1 import policy_pb2 as pb
from services.policy.client import PolicyClient
from services.policy.prompting import SYSTEM_PROMPT, build_messages
from services.policy.types import ChatMessage
from services.trainer.environments import Environment, Task
from services.trainer.rows import Trajectory, Turn
from services.trainer.run_config import HistoryWindow, RolloutSettings


def sample_seed(*parts: object) -> int:
    """A stable 63-bit seed for one generation request (reproducible runs and resumes)."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def history_window(rewards: Sequence[float], size: int, by: HistoryWindow = "last") -> slice:
    """Which earlier turns a prompt keeps: at most ``size`` contiguous ones, the last, or (Dr.
    Kernel's sequential test-time scaling) those of highest summed reward, the latest window
    on ties, so that equal windows prefer what the model saw most recently."""
    count = len(rewards)
    if size <= 0 or count == 0:
        return slice(count, count)
    if count <= size or by == "last":
        return slice(max(count - size, 0), count)
    best = max(range(count - size + 1), key=lambda start: (sum(rewards[start : start + size]), start))
    return slice(best, best + size)


def turn_messages(
    task: Task, history: Sequence[Turn], window: int, by: HistoryWindow = "last"
) -> tuple[ChatMessage, ...]:
    """System prompt + task + a window of at most ``window`` earlier turns (the model's answer
    and the judge's feedback on it), chosen by ``history_window``."""
    kept = history[history_window([t.reward for t in history], window, by)]
    return build_messages(task.source, [(t.text, t.feedback) for t in kept], SYSTEM_PROMPT)


@dataclass
class Rollouts:
    """Everything a step's rollouts need besides the tasks."""

    policy: PolicyClient
    environment: Environment
    settings: RolloutSettings
    seed: int

    def _sampling(self, n: int, seed: int) -> pb.SamplingParams:
        s = self.settings
        return pb.SamplingParams(n=n, temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens, seed=seed)

    async def _judged(
        self, task: Task, prompt_ids: Sequence[int], completion: pb.Completion, generating: float
    ) -> Turn:
        started = time.perf_counter()
        judgement = await self.environment.judge(task, completion.text, completion.token_ids)
        return Turn(
            prompt_ids=list(prompt_ids),
            completion_ids=list(completion.token_ids),
            sampler_logprobs=list(completion.logprobs),
            weights_version=completion.weights_version,
            text=completion.text,
            reward=judgement.reward,
            correct=judgement.correct,
            hacked=judgement.hacked,
            failed=judgement.failed,
            coverage=judgement.coverage,
            speedup=judgement.speedup,
            verdict=judgement.verdict,
            feedback=judgement.feedback,
            seconds_generating=generating,
            seconds_evaluating=time.perf_counter() - started,
        )

    async def _trajectory(
        self,
        task: Task,
        key: tuple[int, int],
        sample: int,
        prompt_ids: Sequence[int],
        first: pb.Completion,
        generating: float,
    ) -> Trajectory:
        """Judges the first completion, then runs the remaining turns of one sample."""
        trajectory = Trajectory(task.name, sample, [await self._judged(task, prompt_ids, first, generating)])
        for turn in range(1, self.settings.turns):
            seed = sample_seed(self.seed, *key, sample, turn)
            messages = turn_messages(task, trajectory.turns, self.settings.history_turns, self.settings.history_window)
            started = time.perf_counter()
            response = await self.policy.generate(messages, self._sampling(1, seed), f"{task.name}/{sample}/{turn}")
            trajectory.turns.append(
                await self._judged(
                    task, response.prompt_token_ids, response.completions[0], time.perf_counter() - started
                )
            )
        return trajectory

    async def group(self, task: Task, step: int, index: int = 0) -> list[Trajectory]:
        """The n trajectories of one task; ``index`` tells apart two groups of one task in a step."""
        key = (step, index)
        started = time.perf_counter()
        response = await self.policy.generate(
            turn_messages(task, (), 0),
            self._sampling(self.settings.samples_per_task, sample_seed(self.seed, *key)),
            f"{task.name}/0",
        )
        generating = time.perf_counter() - started
        return list(
            await asyncio.gather(
                *(
                    self._trajectory(task, key, i, response.prompt_token_ids, completion, generating)
                    for i, completion in enumerate(response.completions)
                )
            )
        )

    async def step(self, tasks: Sequence[Task], step: int) -> list[Trajectory]:
        """Every group of one step, all in flight together; trajectories in task order."""
        groups = await asyncio.gather(*(self.group(task, step, i) for i, task in enumerate(tasks)))
        return [trajectory for group in groups for trajectory in group]
