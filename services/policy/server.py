"""The policy server's entry point: load the model, serve PolicyService until SIGTERM."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from drkernel.config import Settings
from drkernel.sections import SecuritySettings, ServerSettings
from drkernel.serving import RunningServer, ServiceBinding, serve_until_signalled, start_server
from drkernel.v1 import policy_pb2_grpc
from services.policy.engine import PolicyEngine, open_engine
from services.policy.servicer import SERVICE_NAME, PolicyServicer
from services.policy.settings import PolicySettings


def binding(engine: PolicyEngine, settings: PolicySettings) -> ServiceBinding:
    servicer = PolicyServicer(engine, settings.max_update_bytes)
    return ServiceBinding(
        SERVICE_NAME,
        lambda server: policy_pb2_grpc.add_PolicyServiceServicer_to_server(servicer, server),
    )


@dataclass
class RunningPolicy:
    """A started policy server and its engine (for the trainer's embedded default and tests)."""

    server: RunningServer
    engine: PolicyEngine

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    async def stop(self) -> None:
        await self.server.stop()
        await self.engine.close()


async def start_policy(settings: PolicySettings, security: SecuritySettings) -> RunningPolicy:
    """Loads the model and starts a server for it; returns once it serves."""
    engine = open_engine(settings)
    try:
        server = await start_server([binding(engine, settings)], settings.server, security)
    except BaseException:
        await engine.close()
        raise
    return RunningPolicy(server, engine)


@asynccontextmanager
async def local_policy(settings: PolicySettings, security: SecuritySettings) -> AsyncIterator[str]:
    """Serves ``settings``' model on loopback (a port the OS picks, no metrics endpoint) for the
    duration; yields its address (the trainer's and the benchmark's embedded default)."""
    loopback = ServerSettings(host="127.0.0.1", port=0, metrics_port=0, metrics=False)
    running = await start_policy(settings.model_copy(update={"server": loopback}), security)
    try:
        yield running.address
    finally:
        await running.stop()


async def serve(settings: Settings) -> None:
    """Loads the model, serves until SIGTERM, lets running requests finish, then unloads."""
    engine = open_engine(settings.policy)
    await serve_until_signalled(
        [binding(engine, settings.policy)], settings.policy.server, settings.security, on_stopped=engine.close
    )
