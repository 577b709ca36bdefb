"""The SandboxService over real gRPC on loopback: contract, errors, streaming, backpressure."""

from __future__ import annotations

import concurrent.futures
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from drkernel.channels import open_channel
from drkernel.sections import SecuritySettings
from drkernel.v1 import sandbox_pb2 as pb
from drkernel.v1 import sandbox_pb2_grpc
from services.sandbox.server.scheduler import Scheduler
from services.sandbox.server.servicer import start_sandbox
from tests.sandbox.conftest import evaluate, sandbox_settings, source

SERVICE = "drkernel.v1.SandboxService"


def test_describe_reports_workers_and_isolation(sandbox_stub):
    described = sandbox_stub.Describe(pb.DescribeRequest())
    assert [w.id for w in described.workers] == ["cpu:0", "cpu:1"]
    assert described.queue_capacity > 0 and described.version
    mechanisms = {m.name: m for m in described.isolation}
    assert {"bubblewrap namespaces", "seccomp", "resource limits"} <= mechanisms.keys()
    assert mechanisms["resource limits"].active


def test_health_and_reflection(sandbox):
    with grpc.insecure_channel(sandbox.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for name in ("", SERVICE):
            assert (
                health.Check(health_pb2.HealthCheckRequest(service=name)).status
                == health_pb2.HealthCheckResponse.SERVING
            )
        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        answers = reflection.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
        names = {s.name for answer in answers for s in answer.list_services_response.service}
        assert SERVICE in names and "grpc.health.v1.Health" in names


def test_metrics_count_evaluations_by_verdict(sandbox, sandbox_stub):
    evaluate(sandbox_stub, "relu_task.py", "relu_torch_only.py")
    body = urllib.request.urlopen(f"http://127.0.0.1:{sandbox.server.metrics_port}/metrics").read().decode()
    assert 'drkernel_sandbox_evaluations_total{device="cpu",verdict="VERDICT_HACKED"}' in body
    assert 'drkernel_rpc_total{code="OK",method="/drkernel.v1.SandboxService/Evaluate"}' in body


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda r: setattr(r, "reference_source", "import torch\n"),
            "does not define Model, get_inputs, get_init_inputs",
        ),
        (lambda r: setattr(r, "reference_source", "def broken(:\n"), "not valid Python"),
        (lambda r: setattr(r, "candidate_source", "x" * (600 * 1024)), "the limit is"),
        (lambda r: setattr(r.options, "timeout_seconds", -1.0), "timeout_seconds"),
        (lambda r: setattr(r.options, "timing_trials", 2), "timing_trials"),
        (lambda r: setattr(r, "request_id", "r" * 300), "request_id"),
    ],
)
def test_malformed_requests_are_invalid_argument(sandbox_stub, mutate, message):
    request = pb.EvaluateRequest(reference_source=source("relu_task.py"), candidate_source=source("relu_triton.py"))
    mutate(request)
    with pytest.raises(grpc.RpcError) as caught:
        sandbox_stub.Evaluate(request, timeout=60)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in caught.value.details()


def test_undecodable_bytes_are_invalid_argument_and_the_server_keeps_serving(sandbox, sandbox_stub):
    with grpc.insecure_channel(sandbox.address) as channel:
        raw = channel.unary_unary(f"/{SERVICE}/Evaluate", request_serializer=None, response_deserializer=None)
        # Field 2 (reference_source, a string) holding bytes that are not UTF-8.
        with pytest.raises(grpc.RpcError) as caught:
            raw(b"\x12\x02\xff\xfe", timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "could not be decoded" in caught.value.details()
    assert evaluate(sandbox_stub, "relu_task.py", "relu_syntax_error.py").verdict == pb.VERDICT_SYNTAX_ERROR


@pytest.mark.slow
def test_stream_answers_every_request_matched_by_id(sandbox_stub):
    names = ["relu_triton.py", "relu_syntax_error.py", "relu_torch_only.py", "relu_wrong_constructor.py"]
    requests = [
        pb.EvaluateRequest(
            request_id=name,
            reference_source=source("relu_task.py"),
            candidate_source=source(name),
            options=pb.EvaluateOptions(skip_timing=True),
        )
        for name in names
    ]
    responses = {r.request_id: r.verdict for r in sandbox_stub.EvaluateStream(iter(requests), timeout=300)}
    assert responses == {
        "relu_triton.py": pb.VERDICT_CORRECT,
        "relu_syntax_error.py": pb.VERDICT_SYNTAX_ERROR,
        "relu_torch_only.py": pb.VERDICT_HACKED,
        "relu_wrong_constructor.py": pb.VERDICT_COMPILE_ERROR,
    }


@pytest.mark.slow
def test_hang_times_out_crash_is_explained_and_the_next_evaluation_is_right(sandbox_stub):
    hung = evaluate(sandbox_stub, "relu_task.py", "relu_infinite_loop.py", timeout_seconds=5)
    assert hung.verdict == pb.VERDICT_TIMEOUT and "exceeded its limit of 5 s" in hung.error
    crashed = evaluate(sandbox_stub, "relu_task.py", "relu_segfault.py")
    assert crashed.verdict == pb.VERDICT_RUNTIME_ERROR
    assert "SIGSEGV" in crashed.error and "Segmentation fault" in crashed.error
    assert evaluate(sandbox_stub, "relu_task.py", "relu_triton.py").verdict == pb.VERDICT_CORRECT


@pytest.mark.slow
def test_a_time_limit_starts_once_the_candidate_process_has_started(background_loop, tmp_path):
    """With no candidate kept warm, each evaluation starts one (seconds of imports): a limit of
    1 s is the candidate's code's, not spent while its process starts (that ended the process
    before its code was loaded, and the caller got RESOURCE_EXHAUSTED instead of a verdict)."""
    settings = sandbox_settings(tmp_path, cpu_workers=1, warm_candidates=0)
    running = background_loop.run(start_sandbox(settings, SecuritySettings()))
    try:
        with grpc.insecure_channel(running.address) as channel:
            stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
            hung = evaluate(stub, "relu_task.py", "relu_infinite_loop.py", timeout_seconds=1)
        assert hung.verdict == pb.VERDICT_TIMEOUT and "exceeded its limit of 1 s" in hung.error
    finally:
        background_loop.run(running.stop())


def test_the_retry_hint_waits_for_the_queue_and_the_evaluations_in_progress(tmp_path):
    settings = sandbox_settings(
        tmp_path, cpu_workers=2, queue_capacity=4, retry_pushback_ms=1, expected_evaluation_seconds=2.0
    )
    scheduler = Scheduler(settings, cuda_devices=0)
    hints = [scheduler._pushback_ms("cpu") for _ in range(20)]
    assert min(hints) >= 2000 and max(hints) <= 3000  # two busy workers, 2 s each, with jitter
    for _ in range(3):
        scheduler.queues["cpu"].put_nowait(None)  # type: ignore[arg-type] - only the length counts
    hints = [scheduler._pushback_ms("cpu") for _ in range(20)]
    assert min(hints) >= 5000 and max(hints) <= 7500  # (3 waiting + 2 in progress) * 2 s / 2 workers


@pytest.mark.slow
def test_full_queue_answers_resource_exhausted_and_retrying_clients_all_succeed(background_loop, tmp_path):
    settings = sandbox_settings(
        tmp_path, cpu_workers=1, queue_capacity=1, retry_pushback_ms=200, expected_evaluation_seconds=0.5
    )
    running = background_loop.run(start_sandbox(settings, SecuritySettings()))
    request = pb.EvaluateRequest(
        reference_source=source("relu_task.py"), candidate_source=source("relu_syntax_error.py")
    )
    try:
        with grpc.insecure_channel(running.address, options=[("grpc.enable_retries", 0)]) as channel:
            stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
            with concurrent.futures.ThreadPoolExecutor(6) as pool:
                calls = [pool.submit(stub.Evaluate.with_call, request, timeout=120) for _ in range(6)]
                errors = [c.exception() for c in calls if c.exception() is not None]
        assert errors and all(e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED for e in errors)
        hints = [int(value) for key, value in errors[0].trailing_metadata() if key == "grpc-retry-pushback-ms"]
        assert hints and hints[0] >= 200
        with open_channel(running.address, SERVICE, SecuritySettings()) as channel:
            stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                verdicts = list(pool.map(lambda _: stub.Evaluate(request, timeout=300).verdict, range(4)))
        assert verdicts == [pb.VERDICT_SYNTAX_ERROR] * 4
    finally:
        background_loop.run(running.stop())


@pytest.mark.slow
def test_a_candidate_process_that_cannot_start_is_not_judged_against_the_candidate(background_loop, tmp_path):
    """Before Ready no candidate code has run: a start failure (here an address-space limit too
    small for the harness to import torch) is the sandbox's, answered RESOURCE_EXHAUSTED."""
    settings = sandbox_settings(tmp_path, cpu_workers=1, warm_candidates=1)
    settings = settings.model_copy(update={"isolation": settings.isolation.model_copy(update={"memory_bytes": 2**28})})
    running = background_loop.run(start_sandbox(settings, SecuritySettings()))
    try:
        with grpc.insecure_channel(running.address, options=[("grpc.enable_retries", 0)]) as channel:
            stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
            with pytest.raises(grpc.RpcError) as raised:
                evaluate(stub, "relu_task.py", "relu_triton.py")
        assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "failed while starting, before its code was loaded" in raised.value.details()
    finally:
        background_loop.run(running.stop())
