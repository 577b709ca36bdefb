"""The one way callers reach a sandbox: the trainer, the CLI, the demo and the benchmarks.

``SandboxClient`` wraps a channel from drkernel/channels.py (round-robin over every replica
of its address, TLS and token as the security section says, busy or restarting servers
retried with backoff) and bounds the evaluations in flight. ``local_sandbox`` starts a
server on loopback for callers that were given no address (the embedded default of ``make
demo``, tests, benchmarks), secured as the section says like any other; ``LocalSandbox`` does
the same from blocking code, on a background event loop.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager

import grpc
from tqdm import tqdm

from drkernel.background import BackgroundLoop
from drkernel.channels import open_aio_channel, open_channel
from drkernel.config import load_settings
from drkernel.sections import SecuritySettings, ServerSettings
from drkernel.v1 import sandbox_pb2 as pb
from drkernel.v1 import sandbox_pb2_grpc
from services.sandbox.settings import SandboxSettings

SERVICE = pb.DESCRIPTOR.services_by_name["SandboxService"].full_name
# Waiting for a queued evaluation is not the evaluation's own limit: allow for the queue.
QUEUE_ALLOWANCE_SECONDS = 600.0


def loopback(settings: SandboxSettings, **overrides: object) -> SandboxSettings:
    """``settings`` listening on loopback on a port the OS picks, without a metrics endpoint."""
    return settings.model_copy(
        update={
            "server": ServerSettings(host="127.0.0.1", port=0, metrics_port=0, metrics=False),
            **overrides,
        }
    )


class SandboxClient:
    """Async evaluations against a SandboxService (spread over its replicas), at most
    ``concurrency`` at a time."""

    def __init__(self, address: str, concurrency: int = 8, *, security: SecuritySettings) -> None:
        self.address = address
        self._channel = open_aio_channel(address, SERVICE, security)
        self._stub = sandbox_pb2_grpc.SandboxServiceStub(self._channel)
        self._slots = asyncio.Semaphore(concurrency)

    async def evaluate(self, request: pb.EvaluateRequest, timeout: float | None = None) -> pb.EvaluateResponse:
        """Judges one candidate; gRPC errors (bad request, server down) propagate. ``timeout``
        bounds the whole call; by default the request's own limit plus time to wait in the queue."""
        if timeout is None:
            timeout = (request.options.timeout_seconds or 1800.0) + QUEUE_ALLOWANCE_SECONDS
        async with self._slots:
            return await self._stub.Evaluate(request, timeout=timeout)

    async def evaluate_all(
        self,
        requests: Iterable[pb.EvaluateRequest],
        on_result: Callable[[pb.EvaluateResponse], None] | None = None,
    ) -> list[pb.EvaluateResponse]:
        """Judges every request concurrently (bounded); answers in request order."""

        async def one(request: pb.EvaluateRequest) -> pb.EvaluateResponse:
            response = await self.evaluate(request)
            if on_result is not None:
                on_result(response)
            return response

        return list(await asyncio.gather(*(one(r) for r in requests)))

    async def describe(self) -> pb.DescribeResponse:
        return await self._stub.Describe(pb.DescribeRequest(), timeout=30)

    async def close(self) -> None:
        await self._channel.close()


async def judge_with_progress(
    address: str,
    requests: Sequence[pb.EvaluateRequest],
    concurrency: int = 8,
    unit: str = "kernel",
    *,
    security: SecuritySettings,
) -> dict[str, pb.EvaluateResponse]:
    """Judges every request (a few at a time) with a progress bar on stderr; answers by request_id."""
    client = SandboxClient(address, concurrency, security=security)
    try:
        with tqdm(total=len(requests), desc="judging", unit=unit, file=sys.stderr) as bar:
            responses = await client.evaluate_all(requests, on_result=lambda _: bar.update(1))
    finally:
        await client.close()
    return {response.request_id: response for response in responses}


@asynccontextmanager
async def local_sandbox(
    settings: SandboxSettings, security: SecuritySettings, **overrides: object
) -> AsyncIterator[str]:
    """Runs a sandbox server on loopback for the duration; yields its address."""
    from services.sandbox.server.servicer import start_sandbox

    sandbox = await start_sandbox(loopback(settings, **overrides), security)
    try:
        yield sandbox.address
    finally:
        await sandbox.stop()


class LocalSandbox:
    """A loopback sandbox for blocking callers (benchmarks): started at construction with the
    configured settings plus ``overrides``, served from a background event loop."""

    def __init__(self, **overrides: object) -> None:
        from services.sandbox.server.servicer import start_sandbox

        settings = load_settings()
        self.security = settings.security
        self._loop = BackgroundLoop()
        self._sandbox = self._loop.run(start_sandbox(loopback(settings.sandbox, **overrides), self.security))
        self.address = self._sandbox.address

    def channel(self) -> grpc.Channel:
        """A blocking, retrying channel to it."""
        return open_channel(self.address, SERVICE, self.security)

    def stop(self, timeout_seconds: float = 300) -> None:
        self._loop.run(self._sandbox.stop(), timeout_seconds)
        self._loop.close()
