"""Tasks the sandbox can judge: the built-in suite shipped with drkernel and KernelBench
checkouts read from a path. Both are plain KernelBench-format files."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_HERE = Path(__file__).parent
BUILTIN_DIR = _HERE / "builtin"
SOLUTIONS_DIR = _HERE / "solutions"
EXAMPLES_DIR = _HERE / "examples"
_PROBLEM_FILE = re.compile(r"^(\d+)_(.+)\.py$")


@dataclass(frozen=True)
class TaskFile:
    """One task module, with our Triton solution when there is one."""

    name: str
    path: Path
    solution: Path | None = None

    def source(self) -> str:
        return self.path.read_text()


def builtin_tasks() -> list[TaskFile]:
    """The built-in suite (level-1-like ``l1_*`` and level-2-like ``l2_*``), by name."""
    tasks = []
    for path in sorted(BUILTIN_DIR.glob("*.py")):
        solution = SOLUTIONS_DIR / path.name
        tasks.append(TaskFile(path.stem, path, solution if solution.is_file() else None))
    return tasks


def builtin_task(name: str) -> TaskFile:
    """A built-in task by name; KeyError names the ones that exist."""
    for task in builtin_tasks():
        if task.name == name:
            return task
    raise KeyError(f"no built-in task {name!r}; known: {', '.join(t.name for t in builtin_tasks())}")


@dataclass(frozen=True)
class KernelBenchProblem:
    """A problem file of a KernelBench checkout, e.g. level 1, id 19, ``19_ReLU.py``."""

    level: int
    problem_id: int
    path: Path

    @property
    def name(self) -> str:
        return f"level{self.level}/{self.path.stem}"

    def source(self) -> str:
        return self.path.read_text()


def kernelbench_problems(root: Path, level: int | None = None) -> list[KernelBenchProblem]:
    """Lists the problems of a KernelBench checkout (the repository root or its
    ``KernelBench/`` folder), levels 1-4, ordered by level and id."""
    base = root / "KernelBench" if (root / "KernelBench").is_dir() else root
    if not base.is_dir():
        raise FileNotFoundError(f"not a KernelBench checkout: {root}")
    problems = []
    for level_dir in sorted(base.glob("level[1-4]")):
        number = int(level_dir.name.removeprefix("level"))
        if level is not None and number != level:
            continue
        for path in level_dir.glob("*.py"):
            match = _PROBLEM_FILE.match(path.name)
            if match:
                problems.append(KernelBenchProblem(number, int(match.group(1)), path))
    if not problems:
        raise FileNotFoundError(f"no KernelBench problems under {base}" + (f" for level {level}" if level else ""))
    return sorted(problems, key=lambda p: (p.level, p.problem_id))
