"""What a rollout produces and what the learner consumes.

A *turn* is one policy completion and its judgement; a *trajectory* is the T turns of one
sample of one task; a *group* is the n trajectories of one task in one step. Every turn
becomes exactly one training row built from the token ids the policy service returned
(never re-tokenised), so the learner scores the very sequence that was sampled.

Plain dataclasses without torch, so the orchestrator's pure functions (advantages, masks,
rejection) are tested on hand-written numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Turn:
    """One completion of the policy and what the environment made of it."""

    prompt_ids: list[int]
    completion_ids: list[int]
    sampler_logprobs: list[float]
    weights_version: int
    text: str
    reward: float = 0.0
    correct: bool = False
    hacked: bool = False
    # An evaluation error or time-out of the environment itself (not of the candidate): the
    # whole trajectory is masked, as in KernelGym.
    failed: bool = False
    coverage: float = 0.0
    speedup: float = 0.0
    verdict: str = ""
    feedback: str = ""
    seconds_generating: float = 0.0
    seconds_evaluating: float = 0.0


@dataclass
class Trajectory:
    """The turns of one sample of one task, in order."""

    task: str
    sample: int
    turns: list[Turn] = field(default_factory=list)


@dataclass
class TrainingRow:
    """One turn as the learner sees it: the sampled sequence, its advantage and whether its
    loss counts. ``keep`` is False for turns masked by KernelGym's rules, MRS or PRS; such
    turns still counted in their group's baseline."""

    prompt_ids: list[int]
    completion_ids: list[int]
    sampler_logprobs: list[float]
    advantage: float
    keep: bool
    trajectory: int  # index of the trajectory in the step's batch (MRS works per trajectory)
    turn: int

    @property
    def tokens(self) -> int:
        return len(self.prompt_ids) + len(self.completion_ids)
