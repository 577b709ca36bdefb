"""Bad input and load: malformed, oversized and binary requests are refused cleanly and the
server keeps serving; 12 and 100 concurrent clients (each with its own retrying channel, as
trainers connect) all get the right answers. Requests beyond the ones in test_server.py and
test_cli.py; cheap candidates (syntax errors need no sandboxed process) carry the load."""

from __future__ import annotations

import concurrent.futures
import math
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from drkernel.channels import open_channel
from drkernel.sections import SecuritySettings
from drkernel.v1 import common_pb2, sandbox_pb2_grpc
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.server.servicer import start_sandbox
from tests.sandbox.conftest import DATA, evaluate, sandbox_settings, source

SERVICE = "drkernel.v1.SandboxService"
TASK = source("relu_task.py")
EXPECTED = {
    "relu_syntax_error.py": pb.VERDICT_SYNTAX_ERROR,
    "relu_torch_only.py": pb.VERDICT_HACKED,
    "relu_triton.py": pb.VERDICT_CORRECT,
}


def _request(**fields: object) -> pb.EvaluateRequest:
    return pb.EvaluateRequest(**{"reference_source": TASK, "candidate_source": source("relu_triton.py"), **fields})


def _with_options(**options: object) -> pb.EvaluateRequest:
    return _request(options=pb.EvaluateOptions(**options))


_NO_INPUTS = (
    "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n\n"
    "def get_init_inputs():\n    return []\n"
)


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (pb.EvaluateRequest(), "does not define Model"),
        (_request(reference_source=_NO_INPUTS), "get_inputs"),
        (_request(reference_source=TASK + "#" * (600 * 1024)), "reference_source is"),
        (_request(candidate_source="import torch\0\nclass ModelNew: pass\n"), "NUL byte"),
        (_with_options(atol=math.nan), "options.atol must be a finite number"),
        (_with_options(rtol=math.inf), "options.rtol must be a finite number"),
        (_with_options(warmup_trials=20_000), "at most"),
        (_with_options(device=7), "not a known Device"),
    ],
    ids=[
        "empty",
        "task-without-get_inputs",
        "oversized-task",
        "nul-byte",
        "nan-atol",
        "inf-rtol",
        "too-many-warmups",
        "unknown-device",
    ],
)
def test_malformed_request_is_invalid_argument_with_a_clear_message(sandbox_stub, request_, message):
    with pytest.raises(grpc.RpcError) as caught:
        sandbox_stub.Evaluate(request_, timeout=60)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in caught.value.details()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"\x12\x05ab", "could not be decoded"),  # reference_source claims 5 bytes, 2 follow
        (b"\x1a\x03\xc3\x28\x41", "could not be decoded"),  # candidate_source: invalid UTF-8 sequence
        (b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "could not be decoded"),  # runaway varint tag
    ],
    ids=["truncated", "binary-candidate", "bad-varint"],
)
def test_undecodable_bytes_are_invalid_argument(sandbox, raw, message):
    with grpc.insecure_channel(sandbox.address) as channel:
        call = channel.unary_unary(f"/{SERVICE}/Evaluate", request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.RpcError) as caught:
            call(raw, timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in caught.value.details()


def test_message_over_the_grpc_limit_is_refused_and_the_server_keeps_serving(sandbox, sandbox_stub):
    huge = _request(candidate_source="#" * (70 * 2**20))  # above server.max_message_bytes (64 MiB)
    with (
        grpc.insecure_channel(sandbox.address, options=[("grpc.max_send_message_length", 2**28)]) as channel,
        pytest.raises(grpc.RpcError) as caught,
    ):
        sandbox_pb2_grpc.SandboxServiceStub(channel).Evaluate(huge, timeout=60)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "larger than max" in caught.value.details()
    assert evaluate(sandbox_stub, "relu_task.py", "relu_syntax_error.py").verdict == pb.VERDICT_SYNTAX_ERROR


def test_task_whose_own_code_fails_is_invalid_argument(sandbox_stub):
    broken = TASK.replace("return [torch.randn(batch_size, dim)]", "raise ValueError('no inputs today')")
    with pytest.raises(grpc.RpcError) as caught:
        sandbox_stub.Evaluate(_request(reference_source=broken), timeout=300)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (
        "the reference fails on its own inputs" in caught.value.details()
        and "no inputs today" in caught.value.details()
    )


@pytest.mark.slow
def test_reference_out_of_device_memory_is_no_verdict_and_no_fault_of_the_request(sandbox_stub):
    """A GPU whose memory other work has taken cannot be had here: the stand-in is a reference
    that raises the error PyTorch raises then, at the task's own sizes only. That is neither a
    broken task (INVALID_ARGUMENT) nor the candidate's failure: RESOURCE_EXHAUSTED, retryable,
    once the judge has freed its own memory and tried again."""
    starved = TASK.replace(
        "return torch.relu(x)",
        "if x.numel() >= batch_size * dim:\n"
        "            raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 6.00 GiB')\n"
        "        return torch.relu(x)",
    )
    with pytest.raises(grpc.RpcError) as caught:
        sandbox_stub.Evaluate(_request(reference_source=starved), timeout=300)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "the reference ran out of device memory on the task's inputs" in caught.value.details()
    assert evaluate(sandbox_stub, "relu_task.py", "relu_triton.py").verdict == pb.VERDICT_CORRECT


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["oversized", "directory"])
def test_cli_refuses_bad_candidate_files_with_one_line(sandbox, tmp_path: Path, kind):
    candidate = tmp_path / "candidate.py"
    if kind == "oversized":
        candidate.write_text("#" * (70 * 2**20))
    else:
        candidate.mkdir()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "drkernel",
            "eval",
            "--task",
            str(DATA / "relu_task.py"),
            "--candidate",
            str(candidate),
            "--server",
            sandbox.address,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert ("larger than max" if kind == "oversized" else "Is a directory") in result.stderr


def _clients(address: str, names: list[str], make_channel: Callable[[str], grpc.Channel]) -> dict[str, object]:
    """One thread and one channel per client, all released at once; verdicts (or the RPC
    error) by request id."""
    start = threading.Barrier(len(names))

    def client(index: int) -> tuple[str, object]:
        request = pb.EvaluateRequest(
            request_id=f"{index}:{names[index]}",
            reference_source=TASK,
            candidate_source=source(names[index]),
            options=pb.EvaluateOptions(skip_timing=True, skip_profile=True, device=common_pb2.DEVICE_CPU),
        )
        with make_channel(address) as channel:
            stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
            start.wait()
            try:
                return request.request_id, stub.Evaluate(request, timeout=600).verdict
            except grpc.RpcError as error:
                return request.request_id, error.code()

    with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
        return dict(pool.map(client, range(len(names))))


def _mix(total: int) -> list[str]:
    """Mostly syntax errors (judged without a sandboxed process), one hack, one correct kernel."""
    return ["relu_triton.py", "relu_torch_only.py"] + ["relu_syntax_error.py"] * (total - 2)


def _retrying(address: str) -> grpc.Channel:
    return open_channel(address, SERVICE, SecuritySettings())


@pytest.mark.slow
@pytest.mark.parametrize("clients", [12, pytest.param(100, marks=pytest.mark.heavy)])  # 100: make test-heavy
def test_concurrent_clients_all_get_the_right_answer(sandbox, clients):
    names = _mix(clients)
    answers = _clients(sandbox.address, names, _retrying)
    assert answers == {f"{i}:{name}": EXPECTED[name] for i, name in enumerate(names)}


@pytest.mark.heavy  # CI keeps test_server.py::test_full_queue_answers_resource_exhausted_and_retrying_...
def test_retrying_clients_ride_out_a_full_queue(background_loop, tmp_path):
    running = background_loop.run(
        start_sandbox(
            # a syntax error takes a fraction of a second: the first retry hints assume about that
            sandbox_settings(tmp_path, cpu_workers=1, queue_capacity=4, expected_evaluation_seconds=1.0),
            SecuritySettings(),
        )
    )
    try:
        names = ["relu_syntax_error.py"] * 16  # four times what the queue holds
        answers = _clients(running.address, names, _retrying)
    finally:
        background_loop.run(running.stop())
    assert set(answers.values()) == {pb.VERDICT_SYNTAX_ERROR}


@pytest.mark.slow
def test_a_malformed_request_in_a_stream_costs_only_its_own_answer(sandbox_stub):
    good = pb.EvaluateRequest(
        request_id="good",
        reference_source=TASK,
        candidate_source=source("relu_triton.py"),
        options=pb.EvaluateOptions(skip_timing=True, skip_profile=True),
    )
    bad = pb.EvaluateRequest(
        request_id="bad", reference_source="import torch\n", candidate_source=source("relu_triton.py")
    )
    answered: dict[str, int] = {}
    try:
        for response in sandbox_stub.EvaluateStream(iter([good, bad]), timeout=300):
            answered[response.request_id] = response.verdict
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert answered.get("good") == pb.VERDICT_CORRECT
