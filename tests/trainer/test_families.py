"""Generated task families: enough well-formed tasks with unique names, and correct solutions,
judged by the real sandbox (one task per family on the CPU; ``python -m
services.trainer.families --check`` judges them all)."""

from __future__ import annotations

import ast
import re
from typing import Any

import pytest

from drkernel.kernelbench import defines_model_new
from drkernel.sections import SecuritySettings
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.shared.task_source import parse_task
from services.sandbox.tasks import builtin_tasks
from services.trainer.families import FamilyTask, check_table, family_sample, family_tasks, judge_tasks, main

pytestmark = pytest.mark.slow  # family solutions judged through a real server

# Families the templates must produce (the brief's list); the generator may add more.
EXPECTED_FAMILIES = {
    "relu",
    "leaky_relu",
    "sigmoid",
    "tanh",
    "silu",
    "gelu_tanh",
    "abs",
    "square",
    "clamp",
    "exp",
    "softplus",
    "add_row",
    "add_col",
    "mul_row",
    "mul_col",
    "sub_row",
    "sub_col",
    "maximum_row",
    "maximum_col",
    "scale_shift",
    "sum",
    "mean",
    "max",
    "min",
    "softmax",
    "log_softmax",
    "rmsnorm",
    "rmsnorm_affine",
    "layernorm",
    "layernorm_affine",
}


def test_enough_unique_well_formed_tasks() -> None:
    tasks = family_tasks()
    assert len(tasks) >= 150
    assert [t.name for t in tasks] == [t.name for t in family_tasks()]  # deterministic
    names = [t.name for t in tasks]
    assert len(set(names)) == len(names)
    assert not set(names) & {t.name for t in builtin_tasks()}
    assert {t.family for t in tasks} >= EXPECTED_FAMILIES
    for task in tasks:
        assert re.fullmatch(rf"fam_{task.family}(_[0-9a-z]+)*_\d+(x\d+)+", task.name), task.name
        parsed = parse_task(task.reference)
        sizes = [c.value for c in parsed.constants if c.name in ("batch_size", "seq_len", "dim")]
        assert "x".join(map(str, sizes)) == task.name.rsplit("_", 1)[1], task.name
        assert "class Model(nn.Module)" in task.reference and "def get_init_inputs" in task.reference
        assert defines_model_new(ast.parse(task.solution)) and "@triton.jit" in task.solution
        assert "torch.nn.functional" not in task.solution  # the work is in the kernels


def test_variants_differ_in_their_parameters() -> None:
    by_name = {t.name: t for t in family_tasks()}
    low, high = by_name["fam_leaky_relu_0p01_16x1024"], by_name["fam_leaky_relu_0p2_16x1024"]
    assert "negative_slope = 0.01\n" in low.reference and "negative_slope = 0.2\n" in high.reference
    assert low.solution == high.solution  # the slope arrives through the constructor
    assert "reduce_dim = 0\n" in by_name["fam_sum_dim0_128x96"].reference
    assert "eps = 1e-06\n" in by_name["fam_rmsnorm_64x256"].reference


def test_the_sample_is_one_small_task_per_family() -> None:
    sample = family_sample()
    assert sorted(t.family for t in sample) == sorted({t.family for t in family_tasks()})
    assert [t.name for t in sample] == [t.name for t in family_sample()]
    assert {t.name for t in sample} >= {"fam_relu_16x1024", "fam_softmax_64x256", "fam_sum_dim0_128x96"}


def test_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--family", "softmax"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "3 tasks in 1 families" and out[0].split() == ["fam_softmax_32x1024", "softmax"]


def broken(task: FamilyTask) -> FamilyTask:
    """The task with a solution that forgets the negative part of ReLU."""
    solution = task.solution.replace("y = tl.where(x < 0.0, 0.0, x)", "y = x")
    assert solution != task.solution
    return FamilyTask("fam_relu_broken_16x1024", task.family, task.reference, solution)


def judged_sample() -> list[FamilyTask]:
    """The smallest task of each family, and reductions of the two layouts those leave out
    (reduced axis in the middle; reduced axis contiguous), in template order."""
    by_name = {t.name: t for t in family_tasks()}
    return [*family_sample(), by_name["fam_mean_dim1_16x64x96"], by_name["fam_max_dim2_16x64x96"]]


@pytest.mark.heavy
def test_the_first_half_of_the_sample_is_judged_correct_and_a_broken_solution_is_not(
    sandbox: Any, background_loop: Any
) -> None:
    sample = judged_sample()
    half = sample[: len(sample) // 2]
    tasks = [*half, broken(next(t for t in half if t.family == "relu"))]
    responses = background_loop.run(judge_tasks(tasks, sandbox.address, device="cpu", security=SecuritySettings()))
    assert_correct(half, responses)
    assert responses["fam_relu_broken_16x1024"].verdict == pb.VERDICT_INCORRECT
    table, failures = check_table(tasks, responses)
    assert failures == 1
    assert table.splitlines()[-1] == f"{len(half)}/{len(tasks)} correct"
    assert "fam_relu_broken_16x1024" in next(line for line in table.splitlines() if "INCORRECT" in line)


@pytest.mark.heavy
def test_the_second_half_of_the_sample_is_judged_correct(sandbox: Any, background_loop: Any) -> None:
    sample = judged_sample()
    half = sample[len(sample) // 2 :]
    assert_correct(
        half, background_loop.run(judge_tasks(half, sandbox.address, device="cpu", security=SecuritySettings()))
    )


def assert_correct(tasks: list[FamilyTask], responses: dict[str, pb.EvaluateResponse]) -> None:
    wrong = {
        t.name: responses[t.name].error or responses[t.name].feedback
        for t in tasks
        if responses[t.name].verdict != pb.VERDICT_CORRECT
    }
    assert not wrong
    for task in tasks:
        assert sum(c.passed for c in responses[task.name].checks) == 6, task.name
