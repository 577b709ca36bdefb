"""The tasks a run trains on and holds out, from the source its config names."""

from __future__ import annotations

from drkernel.errors import InvalidArgument
from services.sandbox.tasks import builtin_tasks, kernelbench_problems
from services.trainer.environments import Task
from services.trainer.run_config import TaskSettings


def available_tasks(settings: TaskSettings) -> dict[str, Task]:
    """Every task of the configured source, by name."""
    if settings.source == "builtin":
        return {t.name: Task(t.name, t.source()) for t in builtin_tasks()}
    if settings.source == "kernelbench":
        if settings.kernelbench_dir is None:
            raise InvalidArgument("tasks.kernelbench_dir is required when tasks.source is kernelbench")
        problems = [p for p in kernelbench_problems(settings.kernelbench_dir) if p.level in settings.levels]
        return {p.name: Task(p.name, p.source()) for p in problems}
    from services.trainer.families import family_tasks

    return {t.name: Task(t.name, t.reference) for t in family_tasks()}


def split_tasks(settings: TaskSettings) -> tuple[list[Task], list[Task]]:
    """(train, held out). An empty ``train`` means every task not held out; unknown names are
    errors so a typo never silently trains on nothing."""
    tasks = available_tasks(settings)
    unknown = sorted((set(settings.train) | set(settings.heldout)) - set(tasks))
    if unknown:
        raise InvalidArgument(f"unknown task(s) for source {settings.source}: {', '.join(unknown)}")
    heldout = [tasks[name] for name in settings.heldout]
    names = settings.train or tuple(name for name in tasks if name not in settings.heldout)
    train = [tasks[name] for name in names]
    if not train:
        raise InvalidArgument("no tasks to train on")
    return train, heldout
