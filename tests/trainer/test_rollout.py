"""Which earlier turns a prompt keeps: the last ones, or Dr. Kernel's best contiguous window
by summed reward (sequential test-time scaling)."""

from __future__ import annotations

from services.sandbox.tasks import builtin_task
from services.trainer.environments import Task
from services.trainer.rollout import history_window, turn_messages
from services.trainer.rows import Turn


def test_the_best_window_by_summed_reward() -> None:
    rewards = [0.0, 1.0, 1.5, 0.0, 0.2, 0.0]
    assert history_window(rewards, 2, "best_reward") == slice(1, 3)  # 2.5 beats every other pair
    assert history_window(rewards, 2, "last") == slice(4, 6)
    assert history_window(rewards, 4, "best_reward") == slice(1, 5)  # 2.7 (1..4) beats 2.5 (0..3) and 1.7 (2..5)
    assert history_window([0.0, 0.0, 0.0], 2, "best_reward") == slice(1, 3)  # ties: the latest window
    assert history_window([1.0, 0.0], 4, "best_reward") == slice(0, 2)  # fewer turns than the window: all
    assert history_window(rewards, 0, "best_reward") == slice(6, 6)
    assert history_window([], 4, "best_reward") == slice(0, 0)


def test_the_prompt_holds_the_chosen_window() -> None:
    task = Task("l1_relu", builtin_task("l1_relu").source())

    def turn(text: str, reward: float) -> Turn:
        return Turn([], [], [], 0, text, reward=reward, feedback=f"feedback on {text}")

    history = [turn("first", 0.0), turn("good", 1.0), turn("bad", 0.0)]
    best = turn_messages(task, history, 1, "best_reward")
    assert "good" in best[2].content and "feedback on good" in best[3].content and len(best) == 4
    last = turn_messages(task, history, 1)
    assert "bad" in last[2].content and len(last) == 4
    assert turn_messages(task, history, 0) == turn_messages(task, (), 4)  # system prompt and task only
