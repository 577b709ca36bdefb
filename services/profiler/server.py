"""The ProfilerService servicer: forwards to the sandbox, which runs and profiles the candidate
in its isolation, and answers with the profile."""

from __future__ import annotations

import grpc

from drkernel.config import Settings
from drkernel.errors import FailedPrecondition, InvalidArgument, ResourceExhausted, Unavailable
from drkernel.serving import ServiceBinding, serve_until_signalled
from drkernel.v1 import profiler_pb2, profiler_pb2_grpc
from services.profiler.service import evaluation_request, profile_response
from services.profiler.settings import ProfilerSettings
from services.sandbox.client import SandboxClient

_UNBOUNDED = 1 << 20
_PASSED_ON = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
}


class ProfilerServicer(profiler_pb2_grpc.ProfilerServiceServicer):
    """Profile over a sandbox client."""

    def __init__(self, sandbox: SandboxClient, settings: ProfilerSettings, default_timeout: float) -> None:
        self.sandbox = sandbox
        self.settings = settings
        self.default_timeout = default_timeout

    async def Profile(
        self, request: profiler_pb2.ProfileRequest, context: grpc.aio.ServicerContext
    ) -> profiler_pb2.ProfileResponse:
        wait = (request.timeout_seconds or self.default_timeout) + self.settings.extra_timeout_seconds
        try:
            evaluation = await self.sandbox.evaluate(evaluation_request(request), timeout=wait)
        except grpc.aio.AioRpcError as error:
            code = error.code()
            if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise ResourceExhausted(f"sandbox busy: {error.details()}", 1000) from error
            kind = _PASSED_ON.get(code, Unavailable)
            raise kind(f"sandbox at {self.settings.sandbox_address}: {code.name}: {error.details()}") from error
        return profile_response(evaluation)


async def serve(settings: Settings) -> None:
    """Runs the profiler server until SIGTERM."""
    # The sandbox queues and refuses what it cannot take: no bound of the profiler's own.
    sandbox = SandboxClient(settings.profiler.sandbox_address, concurrency=_UNBOUNDED, security=settings.security)
    servicer = ProfilerServicer(sandbox, settings.profiler, settings.sandbox.default_timeout_seconds)
    binding = ServiceBinding(
        profiler_pb2.DESCRIPTOR.services_by_name["ProfilerService"].full_name,
        lambda server: profiler_pb2_grpc.add_ProfilerServiceServicer_to_server(servicer, server),
    )
    await serve_until_signalled([binding], settings.profiler.server, settings.security, on_stopped=sandbox.close)
