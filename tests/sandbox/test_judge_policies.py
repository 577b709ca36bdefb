"""Policies that keep honest kernels from being punished, through a real sandbox server:
correctness profiles, inputs modified and outputs laid out as the reference does, the
precision variant's feedback, and memory planning."""

from __future__ import annotations

from pathlib import Path

import pytest

from drkernel.sections import SecuritySettings
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.judge.memory import Footprint
from services.sandbox.server.servicer import start_sandbox
from services.sandbox.shared.task_source import with_constants
from services.sandbox.tasks import builtin_task
from tests.conftest import BackgroundLoop, sandbox_settings
from tests.sandbox.conftest import evaluate, source

pytestmark = pytest.mark.slow  # correctness profiles through a real server

LEGIT_TASKS = Path(__file__).parent / "legit" / "tasks"

_FLOAT32_OUTPUT = source("relu_triton.py").replace(
    "y = torch.empty_like(x)", "y = torch.empty(x.shape, dtype=torch.float32, device=x.device)"
)

_ZEROES_ITS_INPUT = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)
    tl.store(x_ptr + offs, tl.zeros_like(x), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
"""

# 256 x 1024 float32: 1 MiB per tensor (small enough for the interpreter; the budget below
# scales with it).
_BIG_RELU_TASK = source("relu_task.py").replace("batch_size = 16", "batch_size = 256")
_MiB = 2**20
# A device budget between what a judged call of the task's sizes needs and what one at half
# its sizes needs (one input, one output of the same size): the first does not fit, the
# second does, whatever the planner's margins are.
_SMALL_DEVICE_BYTES = (Footprint(0, _MiB, _MiB).need_bytes() + Footprint(0, _MiB // 4, _MiB // 4).need_bytes()) // 2


def test_kernelbench_profile_checks_the_task_inputs_with_its_tolerance_only(sandbox_stub):
    response = evaluate(
        sandbox_stub, "relu_task.py", "relu_triton.py", correctness_profile=pb.CORRECTNESS_PROFILE_KERNELBENCH
    )
    assert response.verdict == pb.VERDICT_CORRECT, response.error
    assert response.correctness_profile == pb.CORRECTNESS_PROFILE_KERNELBENCH
    kinds = [c.variant for c in response.checks]
    assert kinds == [pb.INPUT_VARIANT_ORIGINAL] + [pb.INPUT_VARIANT_SEED] * 4
    assert all(c.atol == pytest.approx(1e-4) and c.rtol == pytest.approx(1e-4) for c in response.checks)
    assert "tiny" not in " ".join(s.detail for s in response.stages)


def test_a_softmax_whose_every_value_is_within_the_tolerance_is_correct(sandbox_stub):
    """Under the kernelbench profile the first run is at the task's sizes: a softmax over
    20,000 columns of values in [0, 1) (KernelBench's 23_Softmax draws them so) is within atol
    1e-4 of 1/20,000 everywhere, so a knock-out that replaces the
    kernel's results by zeros cannot move it there (was HACKED for an honest kernel): the
    judge knocks out on larger inputs instead, where it can."""
    softmax = builtin_task("l1_softmax")
    task = with_constants(softmax.path.read_text(), {"batch_size": 4, "dim": 20000}).replace("randn(", "rand(")
    assert softmax.solution is not None
    response = evaluate(
        sandbox_stub, task, softmax.solution.read_text(), correctness_profile=pb.CORRECTNESS_PROFILE_KERNELBENCH
    )
    assert response.verdict == pb.VERDICT_CORRECT, response.error
    assert "float inputs x" in " ".join(s.detail for s in response.stages)


def test_kernelgym_profile_uses_its_published_tolerance(sandbox_stub):
    response = evaluate(
        sandbox_stub, "relu_task.py", "relu_triton.py", correctness_profile=pb.CORRECTNESS_PROFILE_KERNELGYM
    )
    assert response.verdict == pb.VERDICT_CORRECT, response.error
    assert len(response.checks) == 5 and all(c.atol == pytest.approx(1e-2) for c in response.checks)


def test_strict_is_the_default_and_a_precision_only_failure_says_so(sandbox_stub):
    response = evaluate(sandbox_stub, "relu_task.py", _FLOAT32_OUTPUT)
    assert response.correctness_profile == pb.CORRECTNESS_PROFILE_STRICT
    assert response.verdict == pb.VERDICT_INCORRECT
    assert response.error.startswith("only at the float16 precision variant")
    assert "Only the float16 precision check failed" in response.feedback
    # the same candidate is correct where the profile runs no precision variant
    lenient = evaluate(
        sandbox_stub, "relu_task.py", _FLOAT32_OUTPUT, correctness_profile=pb.CORRECTNESS_PROFILE_KERNELGYM
    )
    assert lenient.verdict == pb.VERDICT_CORRECT, lenient.error


def test_modifying_an_input_the_reference_modifies_must_leave_what_the_reference_leaves(sandbox_stub):
    task = (LEGIT_TASKS / "relu_inplace.py").read_text()
    mirrored = evaluate(sandbox_stub, task, (Path(__file__).parent / "legit" / "inplace_like_reference.py").read_text())
    assert mirrored.verdict == pb.VERDICT_CORRECT, mirrored.error
    zeroed = evaluate(sandbox_stub, task, _ZEROES_ITS_INPUT)
    assert zeroed.verdict == pb.VERDICT_INCORRECT
    assert "input 0 was left different from what the reference leaves in it" in zeroed.error
    # where the reference leaves its input alone, any modification is wrong
    untouched = evaluate(sandbox_stub, "relu_task.py", _ZEROES_ITS_INPUT)
    assert untouched.verdict == pb.VERDICT_INCORRECT
    assert "which the reference leaves unchanged" in untouched.error


@pytest.fixture(scope="module")
def small_device_stub(background_loop: BackgroundLoop, tmp_path_factory: pytest.TempPathFactory):
    """A server that plans with a small device budget (the planner's budget on CPU)."""
    import grpc

    from drkernel.v1 import sandbox_pb2_grpc

    settings = sandbox_settings(
        tmp_path_factory.mktemp("small"), cpu_workers=1, device_memory_bytes=_SMALL_DEVICE_BYTES
    )
    running = background_loop.run(start_sandbox(settings, SecuritySettings()))
    with grpc.insecure_channel(running.address) as channel:
        yield sandbox_pb2_grpc.SandboxServiceStub(channel)
    background_loop.run(running.stop())


def test_variants_that_do_not_fit_in_device_memory_are_shrunk_and_say_so(small_device_stub):
    # With the judge's copies and its reserve, a call at the task's sizes needs more than the
    # budget: the variants are shrunk rather than failed, and say so.
    response = evaluate(small_device_stub, _BIG_RELU_TASK, "relu_triton.py", skip_profile=True)
    assert response.verdict == pb.VERDICT_CORRECT, response.error
    shrunk = [c for c in response.checks if "shrunk to fit device memory" in c.description]
    assert shrunk, [c.description for c in response.checks]
    assert all(c.passed for c in shrunk)


def test_a_profile_that_never_shrinks_skips_what_does_not_fit_instead(small_device_stub):
    # KernelBench's profile checks the task's own sizes only: a further seed that does not fit
    # is skipped with the reason (the first run checked those sizes), never run smaller.
    response = evaluate(
        small_device_stub,
        _BIG_RELU_TASK,
        "relu_triton.py",
        skip_profile=True,
        correctness_profile=pb.CORRECTNESS_PROFILE_KERNELBENCH,
    )
    assert response.verdict == pb.VERDICT_CORRECT, response.error
    assert not [c for c in response.checks if "shrunk" in c.description]
    skipped = [c for c in response.checks if c.skipped]
    assert skipped and all("never shrinks the task's sizes" in c.message for c in skipped), list(response.checks)
