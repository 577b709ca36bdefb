"""The policy server's entry point: load the model, serve PolicyService until SIGTERM."""

from __future__ import annotations

from drkernel.config import Settings
from drkernel.serving import ServiceBinding, serve_until_signalled
from drkernel.v1 import policy_pb2_grpc
from services.policy.engine import open_engine
from services.policy.servicer import SERVICE_NAME, PolicyServicer


async def serve(settings: Settings) -> None:
    """Loads the model, serves until SIGTERM, lets running requests finish, then unloads."""
    engine = open_engine(settings.policy)
    servicer = PolicyServicer(engine, settings.policy.max_update_bytes)
    binding = ServiceBinding(
        SERVICE_NAME,
        lambda server: policy_pb2_grpc.add_PolicyServiceServicer_to_server(servicer, server),
    )
    await serve_until_signalled([binding], settings.policy.server, on_stopped=engine.close)
