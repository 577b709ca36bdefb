"""The one way callers reach a sandbox: the trainer, the CLI, the demo and the benchmarks.

``SandboxClient`` wraps a channel from drkernel/channels.py (round-robin over every replica
of its address, TLS and token as the security section says, busy or restarting servers
retried with backoff) and bounds the evaluations in flight. ``local_sandbox`` starts a
server on loopback for callers that were given no address (the embedded default of ``make
demo``, tests, benchmarks), secured as the section says like any other; ``LocalSandbox`` does
the same from blocking code, on a background event loop. ``SandboxPool`` spreads evaluations
over several targets named one by one (host names, which gRPC takes only one at a time), each
call to the one with the fewest in flight; ``connect`` picks between the two.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Protocol

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


class Evaluator(Protocol):
    """What judging needs of a sandbox: SandboxClient's and SandboxPool's ``evaluate``."""

    async def evaluate(self, request: pb.EvaluateRequest, timeout: float | None = None) -> pb.EvaluateResponse: ...


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


class SandboxPool:
    """Async evaluations spread over several SandboxService servers, at most ``concurrency``
    in flight over all of them; each goes to the server with the fewest in flight (ties in
    turn), so a slow or busy server gets less work."""

    def __init__(self, addresses: Sequence[str], concurrency: int = 8, *, security: SecuritySettings) -> None:
        if not addresses:
            raise ValueError("a sandbox pool needs at least one address")
        self.addresses = list(addresses)
        self.clients = [SandboxClient(address, concurrency, security=security) for address in addresses]
        self._in_flight = [0] * len(addresses)
        self._turn = 0
        self._slots = asyncio.Semaphore(concurrency)

    def _pick(self) -> int:
        count = len(self.clients)
        order = [(self._turn + offset) % count for offset in range(count)]
        index = min(order, key=lambda i: self._in_flight[i])
        self._turn = (index + 1) % count
        return index

    async def evaluate(self, request: pb.EvaluateRequest, timeout: float | None = None) -> pb.EvaluateResponse:
        """Judges one candidate on the least busy server; gRPC errors propagate."""
        async with self._slots:
            index = self._pick()
            self._in_flight[index] += 1
            try:
                return await self.clients[index].evaluate(request, timeout)
            finally:
                self._in_flight[index] -= 1

    async def describe(self) -> list[pb.DescribeResponse]:
        """Every server's description, in address order."""
        return list(await asyncio.gather(*(client.describe() for client in self.clients)))

    async def close(self) -> None:
        for client in self.clients:
            await client.close()


def connect(
    addresses: Sequence[str], concurrency: int = 8, *, security: SecuritySettings
) -> SandboxClient | SandboxPool:
    """A client for one target (a host:port, an IP list or a name gRPC balances over, such as
    ``dns:///sandbox:50051``) or a pool over several targets, each call to the least busy;
    build it on the event loop that will use it."""
    if len(addresses) == 1:
        return SandboxClient(addresses[0], concurrency, security=security)
    return SandboxPool(addresses, concurrency, security=security)


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
