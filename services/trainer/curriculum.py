"""Which tasks each step trains on, in an order a resumed run reproduces exactly.

Without the curriculum, steps walk epochs over a seeded shuffle of the tasks (a fresh shuffle
each epoch). With it (Beyond TritonRL's adaptive curriculum), each slot of a step is a level-2
task with probability p(L2) = 0.1 + 0.4 * acc_L1 / 0.4 while acc_L1 < 0.4, else 0.5, and
otherwise a level-1 task; each level cycles through its own seeded shuffles, so the policy
meets harder tasks as it masters the easy ones.

Every random choice is drawn from a generator seeded by (seed, what, step or epoch), never
from a generator carried across steps, so the sampler's whole state is a few counters and
recent accuracies: ``state_dict()`` is plain JSON and a resumed run continues with the same
tasks the uninterrupted run would have had.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from services.trainer.run_config import CurriculumSettings

# acc_L1 averages the level-1 observations of the last 4 steps (a step = one next_tasks() call
# and the observe() calls after it): recent enough to follow the policy, and with 16 tasks per
# step about 30 level-1 groups even at p(L2) = 0.5, so one lucky step does not swing it.
ACCURACY_WINDOW_STEPS = 4


def task_level(name: str) -> int | None:
    """1 for ``l1_*`` / ``level1/*``, 2 for ``l2_*`` / ``level2/*``, otherwise None."""
    for level in (1, 2):
        if name.startswith((f"l{level}_", f"level{level}/")):
            return level
    return None


def level2_probability(acc_l1: float) -> float:
    """p(L2) = 0.1 + 0.4 * acc_L1 / 0.4 while acc_L1 < 0.4, else 0.5 (Beyond TritonRL)."""
    return 0.1 + 0.4 * acc_l1 / 0.4 if acc_l1 < 0.4 else 0.5


class _Cycle:
    """Epochs over a seeded shuffle of some names; the position is (epoch, index)."""

    def __init__(self, names: Sequence[str], seed: int, label: str) -> None:
        self.names = sorted(names)  # the order depends on the set of names, not on how it was listed
        self.seed, self.label = seed, label
        self.epoch = self.index = 0
        self._order: tuple[int, list[str]] = (-1, [])

    def take(self) -> str:
        if self.index >= len(self.names):
            self.epoch, self.index = self.epoch + 1, 0
        if self._order[0] != self.epoch:
            order = list(self.names)
            random.Random(f"{self.seed}/{self.label}/epoch/{self.epoch}").shuffle(order)
            self._order = (self.epoch, order)
        self.index += 1
        return self._order[1][self.index - 1]


class TaskSampler:
    """The tasks of each step, deterministic in (tasks, seed, settings, observations).

    A task may appear twice in a step when the step wraps an epoch or has more slots than a
    level has tasks; its two groups then merge into one larger group downstream.
    """

    def __init__(
        self,
        tasks: Sequence[str],
        seed: int,
        curriculum: CurriculumSettings,
        tasks_per_step: int,
        window_steps: int = ACCURACY_WINDOW_STEPS,
    ) -> None:
        if not tasks:
            raise ValueError("no tasks to sample from")
        if tasks_per_step < 1 or window_steps < 1:
            raise ValueError("tasks_per_step and window_steps must be at least 1")
        if curriculum.enabled:
            unknown = [name for name in tasks if task_level(name) is None]
            if unknown:
                raise ValueError(
                    "the curriculum needs level-1 or level-2 task names (l1_*, level1/*, l2_*, level2/*); "
                    f"not: {', '.join(unknown[:5])}"
                )
        self.seed, self.enabled, self.tasks_per_step = seed, curriculum.enabled, tasks_per_step
        self.window_steps = window_steps
        self.step = 0
        self._cycles = {
            "all": _Cycle(tasks, seed, "all"),
            "level1": _Cycle([n for n in tasks if task_level(n) == 1], seed, "level1"),
            "level2": _Cycle([n for n in tasks if task_level(n) == 2], seed, "level2"),
        }
        self._recent: list[list[float]] = []  # level-1 correct rates, one list per recent step

    @property
    def acc_l1(self) -> float:
        """Mean correct rate of the level-1 tasks observed in the last ``window_steps`` steps
        (each observation weighs the same); 0 before any."""
        rates = [rate for step in self._recent for rate in step]
        return sum(rates) / len(rates) if rates else 0.0

    @property
    def p_level2(self) -> float:
        return level2_probability(self.acc_l1)

    def next_tasks(self) -> list[str]:
        """The next step's task names (``tasks_per_step`` of them)."""
        if self.enabled:
            p, draws = self.p_level2, random.Random(f"{self.seed}/levels/step/{self.step}")
            picks = [self._pick_level(draws.random() < p) for _ in range(self.tasks_per_step)]
        else:
            picks = [self._cycles["all"].take() for _ in range(self.tasks_per_step)]
        self.step += 1
        self._recent = [*self._recent, []][-self.window_steps :]
        return picks

    def _pick_level(self, level2: bool) -> str:
        wanted, other = ("level2", "level1") if level2 else ("level1", "level2")
        cycle = self._cycles[wanted] if self._cycles[wanted].names else self._cycles[other]
        return cycle.take()

    def observe(self, task: str, correct_rate: float) -> None:
        """Records how often a task of the step just sampled was solved; only level-1 tasks
        feed acc_L1."""
        if task_level(task) != 1:
            return
        if not self._recent:
            self._recent = [[]]
        self._recent[-1].append(correct_rate)

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable position of the sampler."""
        return {
            "step": self.step,
            "cycles": {name: [cycle.epoch, cycle.index] for name, cycle in self._cycles.items()},
            "recent_level1": [list(step) for step in self._recent],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continues from a ``state_dict()`` of a sampler built with the same arguments."""
        self.step = int(state["step"])
        for name, (epoch, index) in state["cycles"].items():
            self._cycles[name].epoch, self._cycles[name].index = int(epoch), int(index)
        self._recent = [[float(rate) for rate in step] for step in state["recent_level1"]]
