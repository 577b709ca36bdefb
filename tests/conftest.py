"""Shared fixtures: an asyncio loop in a background thread, so that real gRPC servers run
inside the test process while tests call them with ordinary blocking clients, one real
sandbox server on loopback shared by every test that needs kernels judged, throwaway TLS
certificates, two small sandbox servers that require TLS and the token, and a tiny random
policy model with the default model's tokenizer (real chat template, real vocabulary, seconds
to train on a CPU) for the trainer's tests and the end-to-end test of `drkernel up`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
import sys
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest

import drkernel.background
from drkernel.sections import SecuritySettings, ServerSettings
from drkernel.v1 import sandbox_pb2_grpc
from services.sandbox.server.servicer import RunningSandbox, start_sandbox
from services.sandbox.settings import SandboxSettings
from tests.certificates import Certificates, make_certificates
from tests.policy.helpers import build_tiny_model

os.environ["HF_HUB_OFFLINE"] = "1"

T = TypeVar("T")


class BackgroundLoop(drkernel.background.BackgroundLoop):
    """The library's background loop, whose ``run`` explains a hang in a test."""

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = 300) -> T:
        """Runs a coroutine on the loop; if it outlasts ``timeout`` (below pytest's own limit),
        prints where every task of the loop waits, so that a hang explains itself."""
        future = self.submit(coroutine)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            for task in asyncio.all_tasks(self.loop):
                task.print_stack(file=sys.stderr)
            raise


@pytest.fixture(scope="session")
def background_loop() -> Iterator[BackgroundLoop]:
    loop = BackgroundLoop()
    yield loop
    loop.close()


def sandbox_settings(work_dir: Path, **overrides: object) -> SandboxSettings:
    """Settings for a test server: loopback ports chosen by the OS, CPU workers, short limits."""
    base = SandboxSettings(
        server=ServerSettings(host="127.0.0.1", port=0, metrics_port=0),
        device="cpu",
        cpu_workers=2,
        warm_candidates=1,  # two cores: fewer processes starting at once, and fewer started for nothing at the end
        default_timeout_seconds=240,  # the proof-of-work checks make large CPU tasks slow on a loaded 2-core machine
        work_dir=work_dir,
    )
    return base.model_copy(update=overrides)


@pytest.fixture(scope="session")
def sandbox(background_loop: BackgroundLoop, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSandbox]:
    running = background_loop.run(
        start_sandbox(sandbox_settings(tmp_path_factory.mktemp("sandbox")), SecuritySettings())
    )
    yield running
    background_loop.run(running.stop())


@pytest.fixture(scope="session")
def sandbox_stub(sandbox: RunningSandbox) -> Iterator[sandbox_pb2_grpc.SandboxServiceStub]:
    with grpc.insecure_channel(sandbox.address) as channel:
        yield sandbox_pb2_grpc.SandboxServiceStub(channel)


@pytest.fixture(scope="session")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command line is not installed")
    return make_certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def secure_sandboxes(
    background_loop: BackgroundLoop, tmp_path_factory: pytest.TempPathFactory, certificates: Certificates
) -> Iterator[list[RunningSandbox]]:
    """Two sandbox servers of one CPU worker each, requiring TLS and the bearer token."""

    async def start_both() -> list[RunningSandbox]:
        settings = [
            sandbox_settings(tmp_path_factory.mktemp("secure-sandbox"), cpu_workers=1, warm_candidates=1)
            for _ in range(2)
        ]
        return list(await asyncio.gather(*(start_sandbox(s, certificates.security()) for s in settings)))

    running = background_loop.run(start_both())
    yield running
    for sandbox in running:
        background_loop.run(sandbox.stop())


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    """The embedded default model's tokenizer, read straight from its GGUF file (a few seconds;
    converting the whole model would take several times longer)."""
    from transformers import AutoTokenizer

    from services.policy.default_model import gguf_path

    source = gguf_path()
    return AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name, local_files_only=True)


@pytest.fixture(scope="session")
def tiny_policy_dir(tmp_path_factory: pytest.TempPathFactory, tokenizer: Any) -> Path:
    """A random 2-layer Qwen2 with the default tokenizer, saved as a model directory."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-policy"), tokenizer, seed=0)
