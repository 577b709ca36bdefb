"""What scores a completion: the sandbox for kernel tasks, or a token-target reward that tests
the training loop end to end without kernels.

An environment turns one completion into a ``Judgement``: the turn's reward, the flags the
masks and rejection rules need, and the feedback text the next turn's prompt carries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import grpc

from drkernel.logs import get_logger
from drkernel.v1 import common_pb2
from drkernel.v1 import sandbox_pb2 as pb
from services.policy.prompting import ExtractionError, extract_code
from services.sandbox.client import Evaluator
from services.sandbox.settings import RewardSettings
from services.sandbox.shared.evaluation import Stage, Verdict
from services.sandbox.shared.reward import compute_reward
from services.trainer.run_config import RolloutSettings

log = get_logger(__name__)


@dataclass(frozen=True)
class Task:
    """A KernelBench-format reference module and its name."""

    name: str
    source: str


@dataclass(frozen=True)
class Judgement:
    """What the environment made of one completion."""

    reward: float
    feedback: str
    verdict: str
    correct: bool = False
    hacked: bool = False
    failed: bool = False  # the environment could not judge (error, time-out): masks the trajectory
    coverage: float = 0.0
    speedup: float = 0.0


class Environment(Protocol):
    async def judge(self, task: Task, text: str, token_ids: Sequence[int]) -> Judgement: ...


_DEVICES = {"auto": common_pb2.DEVICE_UNSPECIFIED, "cpu": common_pb2.DEVICE_CPU, "cuda": common_pb2.DEVICE_CUDA}
_PROFILES = {
    "strict": pb.CORRECTNESS_PROFILE_STRICT,
    "kernelgym": pb.CORRECTNESS_PROFILE_KERNELGYM,
    "kernelbench": pb.CORRECTNESS_PROFILE_KERNELBENCH,
}
# KernelGym masks the trajectory of an evaluation that timed out along with errors of the
# environment: a time-out says as much about a loaded gym as about the candidate.
_ENVIRONMENT_FAULTS = {pb.VERDICT_TIMEOUT}


def judgement_of(response: pb.EvaluateResponse, reward: RewardSettings) -> Judgement:
    """What a sandbox response means for a turn: the reward computed here with the run's
    reward settings (so PR and staged credit are run switches, whatever the server's
    defaults) and the flags the masks, rejection rules and benchmarks read."""
    verdict = pb.Verdict.Name(response.verdict).removeprefix("VERDICT_")
    return Judgement(
        reward=compute_reward(
            reward,
            verdict=Verdict(response.verdict),
            speedup=response.speedup,
            speedup_valid=response.timing.valid,
            coverage=response.coverage,
            furthest_stage=Stage(response.furthest_stage),
        ),
        feedback=response.feedback or response.error or verdict,
        verdict=verdict,
        correct=response.verdict == pb.VERDICT_CORRECT,
        hacked=response.verdict == pb.VERDICT_HACKED,
        failed=response.verdict in _ENVIRONMENT_FAULTS,
        coverage=response.coverage,
        speedup=response.speedup if response.timing.valid else 0.0,
    )


@dataclass(frozen=True)
class Assessment:
    """A judgement and what it was made from: the module judged (None when the completion
    had none) and the sandbox's response (None when nothing reached the sandbox)."""

    judgement: Judgement
    code: str | None = None
    response: pb.EvaluateResponse | None = None


class SandboxEnvironment:
    """Judges the ModelNew module of a completion through SandboxService (one server, a pool
    or anything else with ``evaluate``)."""

    def __init__(self, client: Evaluator, rollout: RolloutSettings, reward: RewardSettings) -> None:
        self._client, self._rollout, self._reward = client, rollout, reward

    def request(self, task: Task, code: str, request_id: str) -> pb.EvaluateRequest:
        options = pb.EvaluateOptions(
            timeout_seconds=self._rollout.evaluation_timeout_seconds,
            device=_DEVICES[self._rollout.device],
            skip_timing=self._rollout.skip_timing,
            correctness_profile=_PROFILES[self._rollout.correctness_profile],
        )
        if self._rollout.evaluation_seed is not None:
            options.seed = self._rollout.evaluation_seed
        return pb.EvaluateRequest(
            request_id=request_id,
            task_name=task.name,
            reference_source=task.source,
            candidate_source=code,
            options=options,
        )

    async def assess_code(self, task: Task, code: str) -> Assessment:
        """Judges a module as it is; an error of the sandbox itself is a failed judgement."""
        try:
            response = await self._client.evaluate(self.request(task, code, f"{task.name}"))
        except grpc.aio.AioRpcError as error:
            log.warning("evaluation failed", task=task.name, code=error.code().name, details=error.details())
            failed = Judgement(reward=0.0, feedback="The evaluator failed.", verdict="ENVIRONMENT_ERROR", failed=True)
            return Assessment(failed, code)
        return Assessment(judgement_of(response, self._reward), code, response)

    async def assess(self, task: Task, text: str) -> Assessment:
        """Judges the module a completion holds; none is a zero-reward judgement."""
        try:
            code = extract_code(text)
        except ExtractionError as error:
            return Assessment(Judgement(reward=0.0, feedback=f"No code was evaluated: {error}.", verdict="NO_CODE"))
        return await self.assess_code(task, code)

    async def judge(self, task: Task, text: str, token_ids: Sequence[int]) -> Judgement:
        return (await self.assess(task, text)).judgement


class TokenTargetEnvironment:
    """Reward = share of completion tokens in a target set: smooth, cheap and learnable by a
    tiny random model in a few dozen policy-gradient steps, so tests can show that the loop
    (rollouts, advantages, learner, weight sync) really improves a policy."""

    def __init__(self, target_token_ids: Sequence[int]) -> None:
        if not target_token_ids:
            raise ValueError("the token_target environment needs environment.target_token_ids")
        self._targets = frozenset(target_token_ids)

    async def judge(self, task: Task, text: str, token_ids: Sequence[int]) -> Judgement:
        share = sum(t in self._targets for t in token_ids) / max(len(token_ids), 1)
        return Judgement(
            reward=share,
            feedback=f"{share:.0%} of your tokens were target tokens.",
            verdict="SCORED",
            correct=share >= 0.5,
        )
