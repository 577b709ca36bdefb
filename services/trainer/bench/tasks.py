"""The tasks a benchmark runs over, and which task a generation names.

A task set is the built-in suite, a KernelBench checkout (levels and problems selectable) or
a folder of task files; with a generations file and no task set, the tasks are those the file
names. Every task in the set is in the denominator of Fast@p, judged or not.

Task ids: built-in tasks by name (``l1_relu``), KernelBench problems as ``level<L>/<P>``
(``level2/12``), task files of a folder by file stem; a level comes from KernelBench or from
the built-in ``l1_``/``l2_`` prefix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from drkernel.errors import InvalidArgument
from services.sandbox.shared.task_source import parse_task
from services.sandbox.tasks import builtin_tasks, kernelbench_problems
from services.trainer.environments import Task

_KERNELBENCH_ID = re.compile(r"^level(\d+)/(\d+)(?:_.*)?$")
_BUILTIN_LEVEL = re.compile(r"^l(\d+)_")

SetKind = Literal["builtin", "kernelbench", "folder", "generations"]


@dataclass(frozen=True)
class BenchTask:
    """One task: its id (how reports and generations name it), display name and source."""

    id: str
    name: str
    source: str
    level: int | None = None
    path: Path | None = None

    def task(self) -> Task:
        """The environment's view of it (named by its id)."""
        return Task(self.id, self.source)


@dataclass
class TaskSet:
    """The tasks of one benchmark, in order; ``root`` is the folder or checkout they came from."""

    kind: SetKind
    tasks: list[BenchTask]
    root: Path | None = None
    _by_path: dict[Path, BenchTask] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_path = {t.path.resolve(): t for t in self.tasks if t.path is not None}

    @property
    def ids(self) -> list[str]:
        return [t.id for t in self.tasks]

    def get(self, task_id: str) -> BenchTask | None:
        return next((t for t in self.tasks if t.id == task_id), None)

    def resolve(self, reference: str, base_dir: Path | None = None) -> BenchTask | None:
        """The task a generation's ``task`` names: an id of the set, a KernelBench id with its
        file stem, the path of one of its task files (relative to ``base_dir``, to the set's
        folder or to the working directory), or a task file's name or stem that only one task
        has; None if it names none of them."""
        found = self.get(reference) or self.get(kernelbench_id(reference) or "")
        if found is not None:
            return found
        for base in (base_dir, self.root):
            path = task_path(reference, base)
            if path is not None and path.resolve() in self._by_path:
                return self._by_path[path.resolve()]
        named = [t for t in self.tasks if t.path is not None and reference in (t.path.stem, t.path.name)]
        return named[0] if len(named) == 1 else None


def kernelbench_id(reference: str) -> str | None:
    """``level2/12`` for ``level2/12`` or ``level2/12_Gemm_Multiply_LeakyReLU``, else None."""
    match = _KERNELBENCH_ID.match(reference)
    return f"level{int(match.group(1))}/{int(match.group(2))}" if match else None


def task_path(reference: str, base_dir: Path | None) -> Path | None:
    """The task file a reference names, relative to ``base_dir`` first, then as given."""
    if not reference.endswith(".py"):
        return None
    for candidate in ([base_dir / reference] if base_dir is not None else []) + [Path(reference)]:
        if candidate.is_file():
            return candidate
    return None


def _builtin_level(name: str) -> int | None:
    match = _BUILTIN_LEVEL.match(name)
    return int(match.group(1)) if match else None


def _task_file(path: Path, task_id: str) -> BenchTask:
    source = path.read_text(encoding="utf-8")
    try:
        parse_task(source)
    except InvalidArgument as error:
        raise InvalidArgument(f"{path}: {error}") from None
    return BenchTask(task_id, task_id, source, _builtin_level(path.stem), path)


def is_kernelbench_checkout(root: Path) -> bool:
    base = root / "KernelBench" if (root / "KernelBench").is_dir() else root
    return any(base.glob("level[1-4]"))


def load_task_set(spec: str, levels: Sequence[int] = (), problems: Sequence[str] = ()) -> TaskSet:
    """``builtin``, a KernelBench checkout or a folder of task files, restricted to ``levels``
    and to ``problems`` (ids; for KernelBench also bare problem numbers) when given."""
    if spec == "builtin":
        tasks = [BenchTask(t.name, t.name, t.source(), _builtin_level(t.name), t.path) for t in builtin_tasks()]
        task_set = TaskSet("builtin", tasks)
    else:
        root = Path(spec)
        if not root.is_dir():
            raise InvalidArgument(f"--tasks: {spec} is neither 'builtin' nor a folder")
        if is_kernelbench_checkout(root):
            tasks = [
                BenchTask(f"level{p.level}/{p.problem_id}", p.name, p.source(), p.level, p.path)
                for p in kernelbench_problems(root)
            ]
            task_set = TaskSet("kernelbench", tasks, root)
        else:
            files = sorted(p for p in root.glob("*.py") if not p.name.startswith("_"))
            if not files:
                raise InvalidArgument(f"--tasks: no task files (*.py) in {root}")
            task_set = TaskSet("folder", [_task_file(p, p.stem) for p in files], root)
    return restricted(task_set, levels, problems)


def restricted(task_set: TaskSet, levels: Sequence[int], problems: Sequence[str]) -> TaskSet:
    """The tasks of ``levels`` (all when empty) and, when given, only ``problems``."""
    tasks = task_set.tasks
    if levels:
        tasks = [t for t in tasks if t.level in levels]
    if problems:
        wanted: list[BenchTask] = []
        for problem in problems:
            task = _problem(task_set, problem, levels)
            if task is None:
                raise InvalidArgument(f"--problems: no task {problem!r} in the {task_set.kind} task set")
            if task not in wanted:
                wanted.append(task)
        tasks = [t for t in tasks if t in wanted]
    if not tasks:
        raise InvalidArgument(f"no tasks left in the {task_set.kind} task set after choosing levels and problems")
    return TaskSet(task_set.kind, tasks, task_set.root)


def _problem(task_set: TaskSet, problem: str, levels: Sequence[int]) -> BenchTask | None:
    """A task by id or, in KernelBench, by problem number within the chosen level."""
    found = task_set.get(problem) or task_set.get(kernelbench_id(problem) or "")
    if found is not None or task_set.kind != "kernelbench" or not problem.isdigit():
        return found
    matches = [t for t in task_set.tasks if t.id.endswith(f"/{int(problem)}") and (not levels or t.level in levels)]
    if len(matches) > 1:
        raise InvalidArgument(f"--problems: {problem} is a problem of several levels; name one with --levels")
    return matches[0] if matches else None


def tasks_named_by(references: Sequence[str], base_dir: Path | None) -> TaskSet:
    """With no task set given: the built-in tasks and task files the generations name (in
    first-seen order). KernelBench ids need a checkout (--tasks)."""
    builtin = load_task_set("builtin")
    tasks: dict[str | Path, BenchTask] = {}  # by id, task files by their resolved path
    for reference in references:
        path = task_path(reference, base_dir) if builtin.get(reference) is None else None
        key: str | Path = path.resolve() if path is not None else reference
        if key in tasks:
            continue
        if path is not None:
            tasks[key] = _task_file(path, reference)
        elif (task := builtin.get(reference)) is not None:
            tasks[key] = task
    return TaskSet("generations", list(tasks.values()), base_dir)
