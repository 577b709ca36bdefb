"""Generations files: good lines, every kind of bad line reported by its number and skipped,
KernelBench's run folders converted, and the task each line names found in the task set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drkernel.errors import InvalidArgument
from services.sandbox.tasks import builtin_task
from services.trainer.bench.generations import (
    Generation,
    kernelbench_run,
    parse_generations,
    read_generations,
    write_generations,
)
from services.trainer.bench.run import module_of, plan_generations

RELU = builtin_task("l1_relu")


def test_bad_lines_are_reported_by_number_and_skipped() -> None:
    lines = [
        json.dumps({"task": "l1_relu", "sample": 0, "turn": 1, "code": "a", "model": "x"}),  # extra keys ignored
        "",
        "{not json",
        json.dumps({"task": "l1_relu", "sample": 0, "code": "b"}),
        json.dumps({"task": "", "sample": 0, "turn": 1, "code": "c"}),
        json.dumps({"task": "l1_relu", "sample": -1, "turn": 1, "code": "d"}),
        json.dumps({"task": "l1_relu", "sample": True, "turn": 1, "code": "e"}),
        json.dumps({"task": "l1_relu", "sample": 0, "turn": 1.5, "code": "f"}),
        json.dumps({"task": "l1_relu", "sample": 0, "turn": 2, "code": 7}),
        json.dumps("a string"),
        json.dumps({"task": "l1_relu", "sample": 0, "turn": 1, "code": "again"}),
        json.dumps({"task": " l1_relu ", "sample": 1, "turn": 1, "code": "g"}),
    ]
    generations, skipped = parse_generations(lines, "g.jsonl")
    assert [(g.task, g.sample, g.turn, g.code, g.line) for g in generations] == [
        ("l1_relu", 0, 1, "a", 1),
        ("l1_relu", 1, 1, "g", 12),
    ]
    assert [(s.line, s.message.split(" ")[0]) for s in skipped] == [
        (3, "not"),
        (4, "missing"),
        (5, "task"),
        (6, "sample"),
        (7, "sample"),
        (8, "turn"),
        (9, "code"),
        (10, "expected"),
        (11, "repeats"),
    ]
    assert str(skipped[0]).startswith("g.jsonl:3: not valid JSON")
    assert "of line 1" in skipped[-1].message


def test_written_generations_read_back(tmp_path: Path) -> None:
    generations = [Generation("l1_relu", 0, 1, "x = 1\n"), Generation("level2/12", 3, 2, 'print("é")\n')]
    write_generations(tmp_path / "g.jsonl", generations)
    read, skipped = read_generations(tmp_path / "g.jsonl")
    assert [(g.task, g.sample, g.turn, g.code) for g in read] == [
        (g.task, g.sample, g.turn, g.code) for g in generations
    ]
    assert skipped == []


def test_a_file_is_read_line_by_line_as_bytes(tmp_path: Path) -> None:
    """A byte order mark, CRLF endings and U+2028 inside a string (JSON allows it raw; Python's
    splitlines breaks there) cost nothing; a line that is not UTF-8 costs only itself."""
    good = [
        json.dumps({"task": "l1_relu", "sample": s, "turn": 1, "code": f"# a\u2028b\x85c {s}\n"}, ensure_ascii=False)
        for s in range(3)
    ]
    data = "\ufeff" + good[0] + "\r\n" + good[1] + "\n"
    path = tmp_path / "g.jsonl"
    path.write_bytes(data.encode() + b'{"task": "\xe9", "sample": 9}\n' + good[2].encode())
    read, skipped = read_generations(path)
    expected = [(s, line, f"# a\u2028b\x85c {s}\n") for s, line in ((0, 1), (1, 2), (2, 4))]
    assert [(g.sample, g.line, g.code) for g in read] == expected
    assert [str(s) for s in skipped] == [f"{path}:3: not UTF-8 text (byte 10 of the line)"]


def test_a_kernelbench_run_folder_is_read_as_generations(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "my_run"
    run.mkdir(parents=True)
    (run / "level_2_problem_12_sample_1_kernel.py").write_text("two-one")
    (run / "level_2_problem_12_sample_0_kernel.py").write_text("two-zero")
    (run / "level_1_problem_19_sample_0_kernel.py").write_text("one")
    (run / "level_1_problem_19_sample_0_prompt.txt").write_text("a prompt, ignored")
    (run / "eval_results.json").write_text("{}")
    (run / "level_1_problem_3_sample_0_kernel.py").write_bytes(b"\xff\xfe")
    generations, skipped = kernelbench_run(run)
    assert [(g.task, g.sample, g.turn, g.code) for g in generations] == [
        ("level1/19", 0, 1, "one"),
        ("level2/12", 0, 1, "two-zero"),
        ("level2/12", 1, 1, "two-one"),
    ]
    assert [str(s) for s in skipped] == [f"{run / 'level_1_problem_3_sample_0_kernel.py'}: not UTF-8 text (byte 0)"]
    assert read_generations(run)[0] == generations
    with pytest.raises(InvalidArgument, match="no KernelBench kernels"):
        kernelbench_run(tmp_path)
    # a kernel of a problem the task set lacks is named by its file
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "relu.py").write_text(RELU.source())
    plan = plan_generations(run, str(tasks))
    assert plan.generations == [] and len(plan.skipped) == 4
    last = run / "level_2_problem_12_sample_1_kernel.py"
    assert str(plan.skipped[-1]) == f"{last}: no task 'level2/12' in the task set"


def test_each_line_finds_its_task_or_is_skipped(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "relu.py").write_text(RELU.source())
    lines = [
        {"task": "relu", "sample": 0, "turn": 1, "code": "by id"},
        {"task": "relu.py", "sample": 1, "turn": 1, "code": "by file name, in the task folder"},
        {"task": str(tasks / "relu.py"), "sample": 2, "turn": 1, "code": "by absolute path"},
        {"task": "tasks/relu.py", "sample": 0, "turn": 1, "code": "the same task and sample as line 1"},
        {"task": "l1_relu", "sample": 0, "turn": 1, "code": "a built-in task, not in this set"},
    ]
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    plan = plan_generations(path, str(tasks))
    assert plan.task_set.ids == ["relu"]
    assert [(task.id, g.sample, g.line) for task, g in plan.generations] == [
        ("relu", 0, 1),
        ("relu", 1, 2),
        ("relu", 2, 3),
    ]
    assert [(s.line, s.message) for s in plan.skipped] == [
        (4, "repeats task relu sample 0 turn 1 of line 1"),
        (5, "no task 'l1_relu' in the task set"),
    ]
    # without a task set: the built-in tasks and the task files the lines name (paths relative to
    # the generations file); one file named twice is one task, named as it was first, and then
    # its file name and stem name it too
    named = plan_generations(path, None)
    assert named.task_set.ids == [str(tasks / "relu.py"), "l1_relu"]
    assert [(task.id, g.sample, g.line) for task, g in named.generations] == [
        (str(tasks / "relu.py"), 0, 1),
        (str(tasks / "relu.py"), 1, 2),
        (str(tasks / "relu.py"), 2, 3),
        ("l1_relu", 0, 5),
    ]
    assert [s.line for s in named.skipped] == [4]
    kernelbench = tmp_path / "kb.jsonl"
    lines = [{"task": task, "sample": 0, "turn": 1, "code": "x"} for task in ("level1/19", "l1_relu")]
    kernelbench.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert [s.message for s in plan_generations(kernelbench, None).skipped] == [
        "no task 'level1/19' in the task set (a KernelBench id needs --tasks CHECKOUT)"
    ]
    only = plan_generations(path, None, problems=["l1_relu"])  # narrowed like any task set
    assert only.task_set.ids == ["l1_relu"] and [s.line for s in only.skipped] == [1, 2, 3, 4]
    with pytest.raises(InvalidArgument, match="no such file"):
        plan_generations(tmp_path / "absent.jsonl", None)


def test_the_module_judged_is_the_code_or_the_module_a_raw_answer_holds() -> None:
    module = RELU.solution.read_text() if RELU.solution else ""
    assert module_of(module) == module
    assert module_of(f"Here it is.\n\n```python\n{module}```\n").strip() == module.strip()
    assert module_of("def broken(:\n") == "def broken(:\n"  # judged as it is: a syntax error
