"""PolicyService over a real gRPC server on loopback, with the transformers backend on tiny
random models: generation, streaming, weight updates (checkpoint, streamed tensors, LoRA),
errors, health, metrics and the CLI against the server."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
import torch
from grpc_health.v1 import health_pb2, health_pb2_grpc

from drkernel.cli import main as cli_main
from drkernel.sections import SecuritySettings, ServerSettings
from drkernel.serving import ServiceBinding, start_server
from drkernel.v1 import policy_pb2 as pb
from drkernel.v1 import policy_pb2_grpc
from services.policy.client import tensor_update_requests
from services.policy.engine import PolicyEngine, open_engine
from services.policy.servicer import SERVICE_NAME, PolicyServicer, generation_request

from ..conftest import BackgroundLoop
from .helpers import build_tiny_model, forward_logprobs

CHAT = pb.Prompt(chat=pb.Chat(messages=[pb.ChatMessage(role="user", content="Add two vectors in Triton.")]))


class Served:
    """A running server: its address, engine, stub and metrics port."""

    def __init__(self, address: str, engine: PolicyEngine, metrics_port: int) -> None:
        self.address, self.engine, self.metrics_port = address, engine, metrics_port
        self.channel = grpc.insecure_channel(address)
        self.stub = policy_pb2_grpc.PolicyServiceStub(self.channel)


@contextmanager
def serve(settings: Any, background_loop: BackgroundLoop) -> Iterator[Served]:
    engine = open_engine(settings)
    servicer = PolicyServicer(engine, settings.max_update_bytes)
    binding = ServiceBinding(
        SERVICE_NAME, lambda server: policy_pb2_grpc.add_PolicyServiceServicer_to_server(servicer, server)
    )
    running = background_loop.run(
        start_server([binding], ServerSettings(host="127.0.0.1", port=0, metrics_port=0), SecuritySettings())
    )
    served = Served(f"127.0.0.1:{running.port}", engine, running.metrics_port or 0)
    try:
        yield served
    finally:
        served.channel.close()
        background_loop.run(running.stop())
        background_loop.run(engine.close())


@pytest.fixture(scope="module")
def server(tiny_settings: Any, background_loop: BackgroundLoop) -> Iterator[Served]:
    """A server whose weights no test changes."""
    with serve(tiny_settings, background_loop) as served:
        yield served


@pytest.fixture
def fresh_server(tiny_settings: Any, background_loop: BackgroundLoop) -> Iterator[Served]:
    """A server of one's own, for tests that change its weights."""
    with serve(tiny_settings, background_loop) as served:
        yield served


def greedy(stub: Any, max_tokens: int = 8) -> pb.Completion:
    request = pb.GenerateRequest(prompt=CHAT, sampling=pb.SamplingParams(temperature=0, max_tokens=max_tokens))
    return stub.Generate(request).completions[0]


def load(directory: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()


def check_against(model: Any, stub: Any, version: int) -> None:
    """Sampled completions report ``version`` and log-probs of ``model``'s own forward pass."""
    response = stub.Generate(pb.GenerateRequest(prompt=CHAT, sampling=pb.SamplingParams(n=2, max_tokens=8, seed=4)))
    for completion in response.completions:
        assert completion.weights_version == version
        expected = forward_logprobs(model, response.prompt_token_ids, completion.token_ids)
        assert (torch.tensor(completion.logprobs) - expected).abs().max().item() < 1e-4


def test_server_greedy_equals_in_process_greedy(
    server: Served, tiny_settings: Any, background_loop: BackgroundLoop
) -> None:
    request = pb.GenerateRequest(prompt=CHAT, sampling=pb.SamplingParams(temperature=0, max_tokens=12))
    served = server.stub.Generate(request)
    local_engine = open_engine(tiny_settings)
    local = background_loop.run(local_engine.generate(generation_request(request)))
    background_loop.run(local_engine.close())
    assert list(served.prompt_token_ids) == list(local.prompt_token_ids)
    completion = served.completions[0]
    assert completion.text == local.completions[0].text
    assert tuple(completion.token_ids) == local.completions[0].token_ids
    assert tuple(completion.logprobs) == local.completions[0].logprobs
    assert len(completion.token_ids) == len(completion.logprobs) == 12
    assert completion.finish_reason == pb.FINISH_REASON_LENGTH


def test_stream_matches_generate_and_reports_prompt_and_seed_first(server: Served) -> None:
    sampling = pb.SamplingParams(n=2, max_tokens=6, seed=21, top_p=0.95, temperature=0.8)
    whole = server.stub.Generate(pb.GenerateRequest(prompt=CHAT, sampling=sampling))
    pieces = list(server.stub.GenerateStream(pb.GenerateStreamRequest(request_id="s1", prompt=CHAT, sampling=sampling)))
    assert list(pieces[0].prompt_token_ids) == list(whole.prompt_token_ids)
    assert pieces[0].seed == whole.seed == 21
    assert all(not p.prompt_token_ids for p in pieces[1:])
    assert {p.request_id for p in pieces} == {"s1"}
    for completion in whole.completions:
        mine = [p for p in pieces if p.index == completion.index]
        assert "".join(p.text for p in mine) == completion.text
        assert [t for p in mine for t in p.token_ids] == list(completion.token_ids)
        assert [lp for p in mine for lp in p.logprobs] == list(completion.logprobs)
        assert mine[-1].finish_reason == completion.finish_reason != pb.FINISH_REASON_UNSPECIFIED


def test_a_drawn_seed_is_reported_and_reproduces_the_samples(server: Served) -> None:
    request = pb.GenerateRequest(prompt=pb.Prompt(text="def kernel("), sampling=pb.SamplingParams(n=2, max_tokens=6))
    first = server.stub.Generate(request)
    request.sampling.seed = first.seed
    again = server.stub.Generate(request)
    assert [list(c.token_ids) for c in again.completions] == [list(c.token_ids) for c in first.completions]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (pb.GenerateRequest(), "prompt is missing"),
        (pb.GenerateRequest(prompt=pb.Prompt(chat=pb.Chat())), "no messages"),
        (pb.GenerateRequest(prompt=CHAT, sampling=pb.SamplingParams(top_p=0)), "top_p must be in (0, 1]"),
        (pb.GenerateRequest(prompt=CHAT, sampling=pb.SamplingParams(n=100)), "n must be between 1 and 8"),
        (pb.GenerateRequest(prompt=CHAT, sampling=pb.SamplingParams(temperature=-1)), "temperature must be >= 0"),
    ],
)
def test_bad_requests_get_invalid_argument_with_a_message(server: Served, bad: Any, message: str) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        server.stub.Generate(bad)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in caught.value.details()
    with pytest.raises(grpc.RpcError) as streamed:
        list(server.stub.GenerateStream(pb.GenerateStreamRequest(prompt=bad.prompt, sampling=bad.sampling)))
    assert streamed.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_cli_against_the_server(server: Served, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["generate", "--server", server.address, "--prompt", "hi", "--temperature", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("drkernel: server answered INVALID_ARGUMENT: temperature")
    assert (
        cli_main(
            ["generate", "--server", server.address, "--prompt", "hi", "--max-tokens", "5", "--n", "2", "--seed", "3"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.count("--- completion") == 2


def test_model_info_health_and_metrics(server: Served) -> None:
    info = server.stub.GetModelInfo(pb.GetModelInfoRequest())
    assert (info.backend, info.device, info.dtype, info.max_context_tokens) == ("transformers", "cpu", "float32", 1024)
    assert info.has_chat_template and list(info.eos_token_ids) == [2] and info.vocab_size == 49152
    assert info.parameter_count > 6_000_000 and info.weights_version == 0
    health = health_pb2_grpc.HealthStub(server.channel).Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME))
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    greedy(server.stub)
    text = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=10).read().decode()
    for name in (
        'drkernel_policy_requests_total{outcome="ok"}',
        'drkernel_policy_tokens_total{kind="generated"}',
        "drkernel_policy_generation_seconds_count",
        "drkernel_policy_queued_requests",
        'drkernel_rpc_total{code="OK",method="/drkernel.v1.PolicyService/Generate"}',
    ):
        line = next(line for line in text.splitlines() if line.startswith(name))
        assert float(line.split()[-1]) >= 0
    generated = next(
        line for line in text.splitlines() if line.startswith('drkernel_policy_tokens_total{kind="generated"}')
    )
    assert float(generated.split()[-1]) >= 8


def test_update_from_a_checkpoint_directory(fresh_server: Served, other_tiny_model_dir: Path) -> None:
    before = greedy(fresh_server.stub)
    header = pb.WeightsHeader(checkpoint_dir=str(other_tiny_model_dir))
    response = fresh_server.stub.UpdateWeights(iter([pb.UpdateWeightsRequest(header=header)]))
    assert (response.previous_weights_version, response.weights_version) == (0, 1)
    assert response.tensors_loaded > 0
    after = greedy(fresh_server.stub)
    assert after.weights_version == 1 and list(after.token_ids) != list(before.token_ids)
    check_against(load(other_tiny_model_dir), fresh_server.stub, version=1)


def test_update_from_streamed_tensors(
    fresh_server: Served, tiny_model_dir: Path, tmp_path: Path, tokenizer: Any
) -> None:
    target = load(build_tiny_model(tmp_path / "trained", tokenizer, seed=2))
    state = target.state_dict()
    state["model.norm.weight"] = state["model.norm.weight"].to(torch.bfloat16)  # converted on arrival
    target.model.norm.weight.data = state["model.norm.weight"].float()
    requests = tensor_update_requests(state, weights_version=10, chunk_bytes=100_000)
    response = fresh_server.stub.UpdateWeights(requests)
    assert (response.previous_weights_version, response.weights_version) == (0, 10)
    assert response.tensors_loaded == len(state)
    check_against(target, fresh_server.stub, version=10)
    assert fresh_server.stub.GetModelInfo(pb.GetModelInfoRequest()).weights_version == 10


def test_update_with_a_lora_adapter_then_a_checkpoint_drops_it(
    fresh_server: Served, tiny_model_dir: Path, tmp_path: Path
) -> None:
    from peft import LoraConfig, PeftModel, get_peft_model

    adapter_dir = tmp_path / "adapter"
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], init_lora_weights=False)
    get_peft_model(load(tiny_model_dir), config).save_pretrained(adapter_dir)
    before = greedy(fresh_server.stub)
    response = fresh_server.stub.UpdateWeights(
        iter([pb.UpdateWeightsRequest(header=pb.WeightsHeader(lora_adapter_dir=str(adapter_dir)))])
    )
    assert response.weights_version == 1 and response.tensors_loaded == 2 * 3 * 2  # A and B, 3 modules, 2 layers
    assert fresh_server.stub.GetModelInfo(pb.GetModelInfoRequest()).lora_adapter_dir == str(adapter_dir)
    assert list(greedy(fresh_server.stub).token_ids) != list(before.token_ids)
    check_against(PeftModel.from_pretrained(load(tiny_model_dir), adapter_dir).eval(), fresh_server.stub, version=1)

    fresh_server.stub.UpdateWeights(
        iter([pb.UpdateWeightsRequest(header=pb.WeightsHeader(checkpoint_dir=str(tiny_model_dir)))])
    )
    assert fresh_server.stub.GetModelInfo(pb.GetModelInfoRequest()).lora_adapter_dir == ""
    restored = greedy(fresh_server.stub)
    assert list(restored.token_ids) == list(before.token_ids) and restored.weights_version == 2


def test_bad_updates_are_refused_and_change_nothing(fresh_server: Served, tiny_model_dir: Path, tmp_path: Path) -> None:
    stub = fresh_server.stub
    before = greedy(stub)

    def refused(messages: list[Any], code: grpc.StatusCode, message: str) -> None:
        with pytest.raises(grpc.RpcError) as caught:
            stub.UpdateWeights(iter(messages))
        assert caught.value.code() == code, caught.value.details()
        assert message in caught.value.details()

    chunk = pb.UpdateWeightsRequest(chunk=pb.TensorChunk(tensor_index=0, data=b"\0" * 8))
    refused([chunk], grpc.StatusCode.INVALID_ARGUMENT, "first UpdateWeights message must be a header")
    refused([pb.UpdateWeightsRequest(header=pb.WeightsHeader())], grpc.StatusCode.INVALID_ARGUMENT, "names no source")
    refused(
        [pb.UpdateWeightsRequest(header=pb.WeightsHeader(checkpoint_dir=str(tmp_path)))],
        grpc.StatusCode.INVALID_ARGUMENT,
        "no *.safetensors files",
    )
    refused(
        [pb.UpdateWeightsRequest(header=pb.WeightsHeader(lora_adapter_dir=str(tmp_path / "nowhere")))],
        grpc.StatusCode.INVALID_ARGUMENT,
        "not a directory",
    )
    refused(
        list(tensor_update_requests({"model.no_such.weight": torch.zeros(2)})),
        grpc.StatusCode.INVALID_ARGUMENT,
        "not in the model",
    )
    refused(
        list(tensor_update_requests({"model.norm.weight": torch.zeros(3)})),
        grpc.StatusCode.INVALID_ARGUMENT,
        "shape [3] where the model has [64]",
    )
    short = list(tensor_update_requests({"model.norm.weight": torch.zeros(64)}))[:-1]
    refused(short, grpc.StatusCode.INVALID_ARGUMENT, "received 0 of 256 bytes")
    refused(
        [pb.UpdateWeightsRequest(header=pb.WeightsHeader(weights_version=0, checkpoint_dir=str(tiny_model_dir)))],
        grpc.StatusCode.FAILED_PRECONDITION,
        "not newer than the served version 0",
    )
    after = greedy(stub)
    assert after.weights_version == 0 and list(after.token_ids) == list(before.token_ids)
