"""End to end through a real sandbox server: each kind of candidate gets the right verdict."""

from __future__ import annotations

import pytest

from drkernel.v1 import sandbox_pb2 as pb
from tests.sandbox.conftest import evaluate

pytestmark = pytest.mark.slow  # candidates judged through a real server


def stage_status(response: pb.EvaluateResponse) -> dict[str, str]:
    return {
        pb.Stage.Name(s.stage).removeprefix("STAGE_").lower(): pb.StageStatus.Name(s.status)
        .removeprefix("STAGE_STATUS_")
        .lower()
        for s in response.stages
    }


def test_correct_kernel_passes_every_stage_and_variant(sandbox_stub):
    response = evaluate(sandbox_stub, "relu_task.py", "relu_triton.py", skip_timing=False)
    assert response.verdict == pb.VERDICT_CORRECT, response.error
    assert stage_status(response) == {
        "syntax": "passed",
        "load": "passed",
        "compile": "passed",
        "tiny_run": "passed",
        "correctness": "passed",
        "timing": "passed",
        "profile": "passed",
    }
    variants = {pb.InputVariant.Name(c.variant) for c in response.checks if c.passed}
    assert variants == {
        "INPUT_VARIANT_TINY",
        "INPUT_VARIANT_ORIGINAL",
        "INPUT_VARIANT_SEED",
        "INPUT_VARIANT_SCALED",
        "INPUT_VARIANT_RESIZED",
        "INPUT_VARIANT_DTYPE",
    }
    resized = next(c for c in response.checks if c.variant == pb.INPUT_VARIANT_RESIZED)
    assert "batch_size=13" in resized.description and "dim=769" in resized.description
    dtype = next(c for c in response.checks if c.variant == pb.INPUT_VARIANT_DTYPE)
    assert dtype.description == "float16" and dtype.atol == pytest.approx(1e-2)
    # each check says how long the judge spent on it, within the correctness stage's time
    correctness = next(s for s in response.stages if s.stage == pb.STAGE_CORRECTNESS)
    judged = [c.elapsed_seconds for c in response.checks if c.passed and c.variant != pb.INPUT_VARIANT_TINY]
    assert all(seconds > 0 for seconds in judged) and sum(judged) <= correctness.elapsed_seconds
    assert [k.name for k in response.triton_kernels] == ["relu_kernel"]
    assert response.triton_kernels[0].programs > 0
    # CPU timing is reported but never valid and never yields a speedup.
    assert not response.timing.valid and response.speedup == 0.0
    assert response.timing.candidate.trials == 3 and response.timing.candidate.median_us > 0
    assert 0.99 < response.coverage <= 1.0
    assert response.reward == pytest.approx(0.5 + 0.5 * response.coverage)
    assert response.furthest_stage == pb.STAGE_PROFILE
    assert response.device_name == "cpu"
    assert "Correct on 6 input variant(s)" in response.feedback


def test_syntax_error(sandbox_stub):
    response = evaluate(sandbox_stub, "relu_task.py", "relu_syntax_error.py")
    assert response.verdict == pb.VERDICT_SYNTAX_ERROR
    assert "line 4" in response.error and "expected ':'" in response.error
    assert response.furthest_stage == pb.STAGE_UNSPECIFIED
    assert response.reward == 0.0


def test_missing_model_new_is_a_compile_error(sandbox_stub):
    response = evaluate(sandbox_stub, "relu_task.py", "relu_no_model_new.py")
    assert response.verdict == pb.VERDICT_COMPILE_ERROR
    assert "defines no class ModelNew" in response.error
    assert response.furthest_stage == pb.STAGE_SYNTAX


def test_wrong_constructor_is_a_compile_error_naming_the_call(sandbox_stub):
    response = evaluate(sandbox_stub, "relu_task.py", "relu_wrong_constructor.py")
    assert response.verdict == pb.VERDICT_COMPILE_ERROR
    assert "building ModelNew failed" in response.error and "block_size" in response.error


def test_kernel_the_compiler_rejects_is_a_compile_error_on_cpu(sandbox_stub):
    response = evaluate(sandbox_stub, "relu_task.py", "relu_break_in_kernel.py")
    assert response.verdict == pb.VERDICT_COMPILE_ERROR
    assert "do not compile for sm_90" in response.error and "Break" in response.error
    assert response.furthest_stage == pb.STAGE_LOAD


def test_kernel_right_only_at_the_task_shape_is_incorrect(sandbox_stub):
    response = evaluate(sandbox_stub, "relu_task.py", "relu_task_shape_only.py")
    assert response.verdict == pb.VERDICT_INCORRECT
    assert "correct at the task's own sizes" in response.error
    assert "out-of-bounds" in response.error


def test_exception_in_forward_is_a_runtime_error(sandbox_stub):
    response = evaluate(sandbox_stub, "relu_task.py", "relu_runtime_error.py")
    assert response.verdict == pb.VERDICT_RUNTIME_ERROR
    assert "workspace exhausted" in response.error and "line 20" in response.error


def test_pytorch_only_module_is_hacked_in_every_mode(sandbox_stub):
    response = evaluate(sandbox_stub, "relu_task.py", "relu_torch_only.py")
    assert response.verdict == pb.VERDICT_HACKED
    missing = [r for r in response.hack_reasons if "no Triton kernel of its own ran" in r]
    for mode in ("train mode without", "eval mode without", "train mode with ", "eval mode with "):
        assert any(r.startswith(mode) for r in missing), response.hack_reasons
    # and its output is PyTorch's (the trace of PyTorch operators says so too)
    assert all(r in missing or "PyTorch computed the output" in r for r in response.hack_reasons)
    assert response.reward == 0.0
