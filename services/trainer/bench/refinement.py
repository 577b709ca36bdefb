"""Sequential test-time scaling: a policy writes each task's kernel over T turns, each turn
seeing the judge's feedback, with the context Dr. Kernel keeps (the system prompt, the task
and the contiguous window of k earlier turns with the highest summed reward).

It is the training rollout itself (services/trainer/rollout.py, ``history_window =
best_reward``) with an environment that also keeps every assessment, so that each turn
becomes a judged generation exactly as a generations file's line would.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

import grpc
from tqdm import tqdm

from drkernel.logs import get_logger
from services.policy.client import PolicyClient
from services.sandbox.client import Evaluator
from services.sandbox.settings import RewardSettings
from services.trainer.bench.generations import Generation
from services.trainer.bench.tasks import BenchTask
from services.trainer.environments import Assessment, Judgement, SandboxEnvironment, Task
from services.trainer.rollout import Rollouts
from services.trainer.rows import Trajectory
from services.trainer.run_config import RolloutSettings

log = get_logger(__name__)


class RecordingEnvironment(SandboxEnvironment):
    """Judges like SandboxEnvironment, keeping each assessment by (task, completion)."""

    def __init__(self, client: Evaluator, rollout: RolloutSettings, reward: RewardSettings, bar: tqdm) -> None:
        super().__init__(client, rollout, reward)
        self.assessments: dict[tuple[str, str], Assessment] = {}
        self._bar = bar

    async def judge(self, task: Task, text: str, token_ids: Sequence[int]) -> Judgement:
        assessment = await self.assess(task, text)
        self.assessments[(task.name, text)] = assessment
        self._bar.update(1)
        return assessment.judgement


async def refine(
    tasks: Sequence[BenchTask],
    policy: PolicyClient,
    evaluator: Evaluator,
    settings: RolloutSettings,
    reward: RewardSettings,
    seed: int,
    progress: bool,
) -> tuple[list[tuple[Generation, Assessment]], list[str]]:
    """N samples x T turns of every task (all in flight, bounded by the clients); each turn as
    a generation (its extracted module, or the completion when it had none) and its
    assessment, in task, sample and turn order; and the tasks the policy failed on (they count
    as missing), with why."""
    total = len(tasks) * settings.samples_per_task * settings.turns
    failures: list[str] = []
    with tqdm(total=total, desc="refining", unit="turn", file=sys.stderr, disable=not progress) as bar:
        environment = RecordingEnvironment(evaluator, settings, reward, bar)
        rollouts = Rollouts(policy, environment, settings, seed)

        async def group(index: int, task: BenchTask) -> list[Trajectory]:
            try:
                return await rollouts.group(task.task(), step=0, index=index)
            except grpc.aio.AioRpcError as error:  # the task counts as missing; the others go on
                log.warning("the policy failed", task=task.id, code=error.code().name, details=error.details())
                failures.append(f"{task.id}: the policy answered {error.code().name}: {error.details()}")
                bar.update(settings.samples_per_task * settings.turns)
                return []

        groups = await asyncio.gather(*(group(i, t) for i, t in enumerate(tasks)))
    judged = []
    for trajectory in (trajectory for group in groups for trajectory in group):
        for index, turn in enumerate(trajectory.turns):
            assessment = environment.assessments[(trajectory.task, turn.text)]
            code = assessment.code if assessment.code is not None else turn.text
            judged.append((Generation(trajectory.task, trajectory.sample, index + 1, code), assessment))
    return judged, failures
