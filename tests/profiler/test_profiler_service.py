"""The ProfilerService over real gRPC, on a real sandbox: coverage separates a fused kernel
from a lazy one, and the reward follows."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from drkernel.sections import SecuritySettings, ServerSettings
from drkernel.serving import ServiceBinding, start_server
from drkernel.v1 import profiler_pb2, profiler_pb2_grpc, sandbox_pb2
from services.profiler.server import ProfilerServicer
from services.profiler.settings import ProfilerSettings
from services.sandbox.client import SandboxClient
from services.sandbox.tasks import builtin_task

LAZY = Path(__file__).parent / "data" / "gemm_bias_relu_lazy.py"
TASK = builtin_task("l2_gemm_bias_relu")


@pytest.fixture(scope="module")
def profiler_stub(background_loop, sandbox) -> Iterator[profiler_pb2_grpc.ProfilerServiceStub]:
    async def start():
        to_sandbox = SandboxClient(sandbox.address, security=SecuritySettings())
        servicer = ProfilerServicer(to_sandbox, ProfilerSettings(sandbox_address=sandbox.address), 120)
        binding = ServiceBinding(
            "drkernel.v1.ProfilerService",
            lambda server: profiler_pb2_grpc.add_ProfilerServiceServicer_to_server(servicer, server),
        )
        return await start_server(
            [binding], ServerSettings(host="127.0.0.1", port=0, metrics=False), SecuritySettings()
        ), to_sandbox

    running, to_sandbox = background_loop.run(start())
    with grpc.insecure_channel(f"127.0.0.1:{running.port}") as client:
        yield profiler_pb2_grpc.ProfilerServiceStub(client)
    background_loop.run(running.stop())
    background_loop.run(to_sandbox.close())


def profile(stub, candidate: str) -> profiler_pb2.ProfileResponse:
    request = profiler_pb2.ProfileRequest(request_id="p", reference_source=TASK.source(), candidate_source=candidate)
    return stub.Profile(request, timeout=300)


@pytest.mark.slow
def test_fused_kernel_owns_the_time_and_lazy_one_does_not(profiler_stub):
    fused = profile(profiler_stub, TASK.solution.read_text())
    lazy = profile(profiler_stub, LAZY.read_text())
    assert fused.verdict == lazy.verdict == sandbox_pb2.VERDICT_CORRECT
    own = [k for k in fused.kernels if k.is_candidate]
    assert [k.name for k in own] == ["gemm_bias_relu_kernel"] and own[0].calls == 1
    assert fused.coverage >= 0.9
    assert lazy.coverage < 0.5 and lazy.coverage < fused.coverage
    assert [k.name for k in lazy.kernels if k.is_candidate] == ["bias_relu_kernel"]
    assert any(k.name.startswith("aten::") and not k.is_candidate for k in lazy.kernels)
    assert "Fuse the work of aten::" in lazy.feedback
    assert fused.total_device_time_us > 0 and fused.reference_total_device_time_us > 0
    assert any(k.name == "aten::linear" for k in fused.reference_kernels)


def test_pytorch_only_module_has_coverage_zero_and_is_not_profiled(profiler_stub):
    torch_only = TASK.source().replace("class Model(", "class ModelNew(")
    response = profile(profiler_stub, torch_only)
    assert response.verdict == sandbox_pb2.VERDICT_HACKED
    assert response.coverage == 0.0 and not response.kernels
    assert response.error.startswith("not profiled")


def test_bad_request_is_invalid_argument_from_the_sandbox(profiler_stub):
    request = profiler_pb2.ProfileRequest(reference_source="import torch\n", candidate_source="x = 1\n")
    with pytest.raises(grpc.RpcError) as caught:
        profiler_stub.Profile(request, timeout=60)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "does not define Model" in caught.value.details()


@pytest.mark.slow
def test_lazy_kernel_earns_less_reward_than_fused_at_equal_speedup(sandbox_stub):
    def evaluate(candidate: str) -> sandbox_pb2.EvaluateResponse:
        request = sandbox_pb2.EvaluateRequest(
            reference_source=TASK.source(),
            candidate_source=candidate,
            options=sandbox_pb2.EvaluateOptions(skip_timing=True),
        )
        return sandbox_stub.Evaluate(request, timeout=300)

    fused, lazy = evaluate(TASK.solution.read_text()), evaluate(LAZY.read_text())
    assert fused.verdict == lazy.verdict == sandbox_pb2.VERDICT_CORRECT
    assert fused.speedup == lazy.speedup  # both unmeasured on CPU: equal
    assert fused.reward - lazy.reward > 0.2
    assert fused.reward == pytest.approx(0.5 + 0.5 * fused.coverage)


@pytest.mark.slow
def test_cli_json_prints_the_profile_response():
    result = subprocess.run(
        [sys.executable, "-m", "drkernel", "profile", "--task", str(TASK.path), "--candidate", str(LAZY), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    response = json.loads(result.stdout)
    assert {"kernels", "coverage", "total_device_time_us"} <= response.keys()
    assert all({"name", "calls", "device_time_us", "is_candidate"} <= k.keys() for k in response["kernels"])
    assert any(k["name"] == "bias_relu_kernel" and k["is_candidate"] for k in response["kernels"])
