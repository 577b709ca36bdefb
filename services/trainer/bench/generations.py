"""Generations files: any model's kernels, one JSON object per line, for ``drkernel bench``.

Each line is ``{"task": ..., "sample": 0, "turn": 1, "code": "..."}``:

- ``task``: a built-in task id (``l1_relu``), a KernelBench problem (``level2/12``, or with
  the file's stem ``level2/12_Gemm_Multiply_LeakyReLU``), the path of a task file (relative to
  the generations file, to the task set's folder or to the working directory), or a task
  file's name that only one task of the set has (``12_Gemm_Multiply_LeakyReLU.py``);
- ``sample``: which independent sample of the task, an integer from 0;
- ``turn``: its turn in a multi-turn refinement, an integer from 1 (single-turn files: 1);
- ``code``: the Python module defining ``ModelNew``, as the judge will run it (a raw answer
  with prose and a fenced block is accepted: its module is extracted).

Other keys are ignored. A line that is not UTF-8 or not such an object, or repeats a (task,
sample, turn) seen earlier, is reported with its line number and skipped; the rest are judged.
Lines end at ``\n`` only (``\r\n`` too; a UTF-8 byte order mark at the start is ignored):
JSON strings may hold U+2028 and other characters Python's ``splitlines`` would break at.

KernelBench's own runs (``scripts/generate_samples.py``) are folders of
``level_<L>_problem_<P>_sample_<S>_kernel.py`` files, one kernel per file; such a folder is
read as the generations ``task = level<L>/<P>``, ``sample = S``, ``turn = 1``.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from drkernel.errors import InvalidArgument

_KERNELBENCH_RUN_FILE = re.compile(r"^level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")


@dataclass(frozen=True)
class Generation:
    """One kernel of one model for one task; ``line`` is where it was read (0: not read)."""

    task: str
    sample: int
    turn: int
    code: str
    line: int = 0
    where: str = ""  # the file it was read from, when not the generations file (a run folder's)

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.task, self.sample, self.turn)


@dataclass(frozen=True)
class SkippedLine:
    """A line (or file) that was not judged, and why."""

    line: int
    message: str
    where: str = ""

    def __str__(self) -> str:
        if not self.line:  # a whole file (a run folder's kernel)
            return f"{self.where}: {self.message}"
        return f"{self.where}:{self.line}: {self.message}" if self.where else f"line {self.line}: {self.message}"


def _integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _problem(record: object) -> str | None:
    """Why a decoded line is not a generation, or None."""
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    missing = [key for key in ("task", "sample", "turn", "code") if key not in record]
    if missing:
        return f"missing {', '.join(missing)}"
    if not isinstance(record["task"], str) or not record["task"].strip():
        return "task must be a non-empty string"
    if not _integer(record["sample"]) or record["sample"] < 0:
        return f"sample must be an integer >= 0, got {record['sample']!r}"
    if not _integer(record["turn"]) or record["turn"] < 1:
        return f"turn must be an integer >= 1, got {record['turn']!r}"
    if not isinstance(record["code"], str):
        return "code must be a string"
    return None


def parse_generations(lines: Iterable[str | bytes], where: str = "") -> tuple[list[Generation], list[SkippedLine]]:
    """The generations of JSONL lines (bytes are decoded line by line, so that one bad byte
    costs its line only), and the lines skipped with the reason; blank lines are neither."""
    generations: list[Generation] = []
    skipped: list[SkippedLine] = []
    seen: dict[tuple[str, int, int], int] = {}
    for number, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as error:
            skipped.append(SkippedLine(number, f"not UTF-8 text (byte {error.start} of the line)", where))
            continue
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            skipped.append(SkippedLine(number, f"not valid JSON ({error.msg}, column {error.colno})", where))
            continue
        problem = _problem(record)
        if problem is not None:
            skipped.append(SkippedLine(number, problem, where))
            continue
        generation = Generation(record["task"].strip(), record["sample"], record["turn"], record["code"], number)
        if generation.key in seen:
            skipped.append(
                SkippedLine(
                    number,
                    f"repeats task {generation.task!r} sample {generation.sample} "
                    f"turn {generation.turn} of line {seen[generation.key]}",
                    where,
                )
            )
            continue
        seen[generation.key] = number
        generations.append(generation)
    return generations, skipped


def read_generations(path: Path) -> tuple[list[Generation], list[SkippedLine]]:
    """A generations file, or a KernelBench run folder (converted as it is read)."""
    if path.is_dir():
        return kernelbench_run(path)
    return parse_generations(path.read_bytes().removeprefix(codecs.BOM_UTF8).split(b"\n"), str(path))


def kernelbench_run(run_dir: Path) -> tuple[list[Generation], list[SkippedLine]]:
    """The kernels of a KernelBench run folder (``runs/<run_name>/``) as generations, ordered
    by level, problem and sample; files that are not UTF-8 are skipped and reported, files of
    other names (prompts, eval results) ignored."""
    found: list[tuple[tuple[int, int, int], Generation]] = []
    skipped: list[SkippedLine] = []
    for path in run_dir.iterdir():
        match = _KERNELBENCH_RUN_FILE.match(path.name)
        if match is None or not path.is_file():
            continue
        level, problem, sample = (int(group) for group in match.groups())
        try:
            code = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            skipped.append(SkippedLine(0, f"not UTF-8 text (byte {error.start})", str(path)))
            continue
        found.append(
            ((level, problem, sample), Generation(f"level{level}/{problem}", sample, 1, code, where=str(path)))
        )
    if not found and not skipped:
        raise InvalidArgument(
            f"{run_dir} holds no KernelBench kernels (files named level_<L>_problem_<P>_sample_<S>_kernel.py)"
        )
    return [generation for _, generation in sorted(found, key=lambda item: item[0])], skipped


def write_generations(path: Path, generations: Sequence[Generation]) -> None:
    """Writes generations as a generations file (the format above)."""
    with path.open("w", encoding="utf-8") as out:
        for g in generations:
            out.write(json.dumps({"task": g.task, "sample": g.sample, "turn": g.turn, "code": g.code}) + "\n")
