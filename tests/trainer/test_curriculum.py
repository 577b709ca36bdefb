"""Task order: seeded epochs, the adaptive curriculum's p(L2), and resuming mid-run."""

from __future__ import annotations

import json

import pytest

from services.trainer.curriculum import TaskSampler, level2_probability, task_level
from services.trainer.run_config import CurriculumSettings

OFF, ON = CurriculumSettings(enabled=False), CurriculumSettings(enabled=True)
L1 = [f"l1_t{i}" for i in range(5)]
L2 = [f"level2/{i}_T" for i in range(3)]


@pytest.mark.parametrize(
    ("acc_l1", "expected"),
    # 0.1 + 0.4 * acc / 0.4 = 0.1 + acc below 0.4; 0.5 from 0.4 on
    [(0.0, 0.1), (0.1, 0.2), (0.2, 0.3), (0.39, 0.49), (0.4, 0.5), (0.63, 0.5), (1.0, 0.5)],
)
def test_level2_probability(acc_l1, expected):
    assert level2_probability(acc_l1) == pytest.approx(expected)


def test_task_levels():
    assert [
        task_level(n)
        for n in ("l1_relu", "level1/19_ReLU", "l2_gemm", "level2/1_Conv", "level3/1_MLP", "relu_l1_", "l12_x")
    ] == [1, 1, 2, 2, None, None, None]


def test_epochs_visit_every_task_once_in_a_seeded_order():
    tasks = ["a", "b", "c", "d"]
    sampler = TaskSampler(tasks, seed=1, curriculum=OFF, tasks_per_step=2)
    epoch = sampler.next_tasks() + sampler.next_tasks()
    assert sorted(epoch) == tasks
    second = sampler.next_tasks() + sampler.next_tasks()
    assert sorted(second) == tasks
    again = TaskSampler(list(reversed(tasks)), seed=1, curriculum=OFF, tasks_per_step=4)  # listing order is irrelevant
    assert again.next_tasks() == epoch and again.next_tasks() == second
    orders = {tuple(TaskSampler(tasks, seed=s, curriculum=OFF, tasks_per_step=4).next_tasks()) for s in range(10)}
    assert len(orders) > 1  # the seed matters


def test_a_step_larger_than_the_task_list_wraps_into_the_next_epoch():
    sampler = TaskSampler(["a", "b", "c"], seed=0, curriculum=OFF, tasks_per_step=5)
    first = sampler.next_tasks()
    assert len(first) == 5 and sorted(first[:3]) == ["a", "b", "c"]
    assert sorted(first[3:] + sampler.next_tasks()[:1]) == ["a", "b", "c"]  # epoch 2 = 2 + 1 of the next step


def _level2_share(sampler: TaskSampler, steps: int, l1_rate: float) -> float:
    picks = []
    for _ in range(steps):
        names = sampler.next_tasks()
        picks += names
        for name in names:
            sampler.observe(name, l1_rate if task_level(name) == 1 else 0.9)
    return sum(task_level(n) == 2 for n in picks) / len(picks)


@pytest.mark.parametrize(("l1_rate", "p"), [(0.0, 0.1), (0.2, 0.3), (0.8, 0.5)])
def test_curriculum_draws_level2_with_p(l1_rate, p):
    # 300 steps x 8 slots = 2400 draws: the binomial std is at most 0.01, the tolerance 0.03;
    # level-2 observations (0.9) must not feed acc_L1
    sampler = TaskSampler(L1 + L2, seed=5, curriculum=ON, tasks_per_step=8)
    assert _level2_share(sampler, 300, l1_rate) == pytest.approx(p, abs=0.03)
    assert sampler.acc_l1 == pytest.approx(l1_rate)
    assert sampler.p_level2 == pytest.approx(p)


def test_acc_l1_averages_the_last_window_steps():
    sampler = TaskSampler(L1 + L2, seed=0, curriculum=ON, tasks_per_step=2, window_steps=2)
    assert sampler.acc_l1 == 0.0 and sampler.p_level2 == pytest.approx(0.1)
    sampler.next_tasks()
    sampler.observe("l1_t0", 1.0)
    sampler.observe("l1_t1", 0.5)
    assert sampler.acc_l1 == pytest.approx(0.75)  # (1 + 0.5) / 2
    sampler.next_tasks()
    sampler.observe("l1_t2", 0.0)
    sampler.observe("level2/0_T", 1.0)  # level 2: ignored
    assert sampler.acc_l1 == pytest.approx(0.5)  # (1 + 0.5 + 0) / 3
    sampler.next_tasks()
    sampler.observe("l1_t3", 0.3)
    assert sampler.acc_l1 == pytest.approx(0.15)  # step 1 left the window: (0 + 0.3) / 2
    assert sampler.p_level2 == pytest.approx(0.25)  # 0.1 + 0.15


def test_each_level_cycles_through_its_own_shuffle():
    sampler = TaskSampler(L1 + L2, seed=3, curriculum=ON, tasks_per_step=4)
    picks = [n for _ in range(20) for n in sampler.next_tasks()]
    level1 = [n for n in picks if task_level(n) == 1]
    level2 = [n for n in picks if task_level(n) == 2]
    assert len(level1) >= 10 and len(level2) >= 3
    assert sorted(level1[:5]) == L1 and sorted(level1[5:10]) == L1  # whole epochs of level 1
    assert sorted(level2[:3]) == sorted(L2)


def test_a_missing_level_falls_back_to_the_other():
    only_l1 = TaskSampler(L1, seed=0, curriculum=ON, tasks_per_step=10)
    for name in L1:
        only_l1.observe(name, 1.0)  # p(L2) = 0.5, but there is no level-2 task
    assert all(task_level(n) == 1 for _ in range(5) for n in only_l1.next_tasks())
    only_l2 = TaskSampler(L2, seed=0, curriculum=ON, tasks_per_step=10)  # p(L2) = 0.1
    assert all(task_level(n) == 2 for n in only_l2.next_tasks())


def test_invalid_arguments():
    with pytest.raises(ValueError, match="level3/1_MLP"):
        TaskSampler([*L1, "level3/1_MLP"], seed=0, curriculum=ON, tasks_per_step=1)
    TaskSampler(["level3/1_MLP"], seed=0, curriculum=OFF, tasks_per_step=1)  # no levels needed without it
    with pytest.raises(ValueError, match="no tasks"):
        TaskSampler([], seed=0, curriculum=OFF, tasks_per_step=1)
    with pytest.raises(ValueError, match="tasks_per_step"):
        TaskSampler(L1, seed=0, curriculum=OFF, tasks_per_step=0)


@pytest.mark.parametrize("curriculum", [OFF, ON])
def test_a_resumed_sampler_continues_the_same_order(curriculum):
    def run(sampler: TaskSampler, steps: int) -> list[list[str]]:
        out = []
        for _ in range(steps):
            names = sampler.next_tasks()
            out.append(names)
            for name in names:  # a deterministic, task-dependent correct rate
                sampler.observe(name, (sum(map(ord, name)) % 10) / 10)
        return out

    straight = TaskSampler(L1 + L2, seed=9, curriculum=curriculum, tasks_per_step=3)
    expected = run(straight, 12)

    first = TaskSampler(L1 + L2, seed=9, curriculum=curriculum, tasks_per_step=3)
    head = run(first, 5)  # mid-epoch for every cycle
    state = json.loads(json.dumps(first.state_dict()))  # the checkpoint stores JSON
    resumed = TaskSampler(L1 + L2, seed=9, curriculum=curriculum, tasks_per_step=3)
    resumed.load_state_dict(state)
    assert resumed.acc_l1 == pytest.approx(first.acc_l1)
    assert head + run(resumed, 7) == expected
    # a fresh sampler without the state would repeat the start instead
    assert run(TaskSampler(L1 + L2, seed=9, curriculum=curriculum, tasks_per_step=3), 7) != expected[5:]
