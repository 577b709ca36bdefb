"""The built-in suite is complete and every reference solution is judged correct; KernelBench
checkouts are listed from a path."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from drkernel.v1 import sandbox_pb2 as pb
from drkernel.v1 import sandbox_pb2_grpc
from services.sandbox.shared.task_source import parse_task
from services.sandbox.tasks import builtin_task, builtin_tasks, kernelbench_problems

pytestmark = pytest.mark.slow  # every built-in solution judged through a real server


def test_suite_has_enough_tasks_of_both_levels_each_with_a_solution():
    tasks = builtin_tasks()
    assert len(tasks) >= 24
    assert sum(t.name.startswith("l1_") for t in tasks) >= 12
    assert sum(t.name.startswith("l2_") for t in tasks) >= 6
    for task in tasks:
        assert task.solution is not None, task.name
        parse_task(task.source())
    with pytest.raises(KeyError, match="l1_relu"):
        builtin_task("l9_nothing")


@pytest.mark.heavy  # `make demo` judges each of them too, on every fresh machine; CI judges the legit corpus
def test_every_reference_solution_is_judged_correct(sandbox):
    requests = [
        pb.EvaluateRequest(
            request_id=task.name,
            reference_source=task.source(),
            candidate_source=task.solution.read_text(),
            # correctness only: the legitimate corpus and `make demo` cover the profile stage
            options=pb.EvaluateOptions(skip_timing=True, skip_profile=True),
        )
        for task in builtin_tasks()
    ]
    with grpc.insecure_channel(sandbox.address) as channel:
        stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
        responses = list(stub.EvaluateStream(iter(requests), timeout=1800))
    wrong = {r.request_id: r.error for r in responses if r.verdict != pb.VERDICT_CORRECT}
    assert not wrong
    assert len(responses) == len(requests)
    for response in responses:
        assert sum(c.passed for c in response.checks) == 6, response.request_id


def test_kernelbench_checkout_is_listed_by_level_and_id(tmp_path: Path):
    relu = builtin_task("l1_relu").source()
    for level, name in [
        (1, "19_ReLU.py"),
        (1, "2_Standard_matrix_multiplication_.py"),
        (2, "1_Conv2D_ReLU_BiasAdd.py"),
        (4, "3_Model.py"),
    ]:
        folder = tmp_path / "KernelBench" / f"level{level}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(relu)
    (tmp_path / "KernelBench" / "level1" / "README.md").write_text("not a problem")
    problems = kernelbench_problems(tmp_path)
    assert [(p.level, p.problem_id) for p in problems] == [(1, 2), (1, 19), (2, 1), (4, 3)]
    assert problems[1].name == "level1/19_ReLU" and problems[1].source() == relu
    assert [p.problem_id for p in kernelbench_problems(tmp_path / "KernelBench", level=1)] == [2, 19]
    with pytest.raises(FileNotFoundError, match="level 3"):
        kernelbench_problems(tmp_path, level=3)
    with pytest.raises(FileNotFoundError, match="not a KernelBench checkout"):
        kernelbench_problems(tmp_path / "missing")
