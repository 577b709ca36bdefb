"""The SandboxService servicer: translates protos to scheduler calls and back, nothing more."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc

from drkernel.config import Settings
from drkernel.serving import RunningServer, ServiceBinding, serve_until_signalled, start_server, status_for
from drkernel.v1 import sandbox_pb2 as pb
from drkernel.v1 import sandbox_pb2_grpc
from services.sandbox.server.scheduler import Scheduler, visible_cuda_devices
from services.sandbox.settings import SandboxSettings


class SandboxServicer(sandbox_pb2_grpc.SandboxServiceServicer):
    """Evaluate, EvaluateStream and Describe over one scheduler."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    async def Evaluate(self, request: pb.EvaluateRequest, context: grpc.aio.ServicerContext) -> pb.EvaluateResponse:
        return await self.scheduler.evaluate(request)

    async def EvaluateStream(
        self, request_iterator: AsyncIterator[pb.EvaluateRequest], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.EvaluateResponse]:
        finished: asyncio.Queue[asyncio.Task[pb.EvaluateResponse] | None] = asyncio.Queue()
        pending: set[asyncio.Task[pb.EvaluateResponse]] = set()

        async def evaluate(request: pb.EvaluateRequest) -> pb.EvaluateResponse:
            try:
                return await self.scheduler.evaluate(request, wait_for_room=True)
            except Exception as error:
                code, message, _ = status_for(error)
                return pb.EvaluateResponse(request_id=request.request_id, request_error=f"{code.name}: {message}")

        async def read_requests() -> None:
            async for request in request_iterator:
                task = asyncio.create_task(evaluate(request))
                pending.add(task)
                task.add_done_callback(lambda t: (pending.discard(t), finished.put_nowait(t)))
            await finished.put(None)

        reader = asyncio.create_task(read_requests())
        open_requests = True
        try:
            while open_requests or pending or not finished.empty():
                item = await finished.get()
                if item is None:
                    open_requests = False
                    reader.result()
                    continue
                yield item.result()
        finally:
            reader.cancel()
            for task in pending:
                task.cancel()

    async def Describe(self, request: pb.DescribeRequest, context: grpc.aio.ServicerContext) -> pb.DescribeResponse:
        return self.scheduler.describe()


def binding(scheduler: Scheduler) -> ServiceBinding:
    """The SandboxService servicer over ``scheduler``, ready to add to a server."""
    servicer = SandboxServicer(scheduler)
    return ServiceBinding(
        pb.DESCRIPTOR.services_by_name["SandboxService"].full_name,
        lambda server: sandbox_pb2_grpc.add_SandboxServiceServicer_to_server(servicer, server),
    )


@dataclass
class RunningSandbox:
    """A started sandbox server and its scheduler (for tests, the demo and embedding)."""

    server: RunningServer
    scheduler: Scheduler

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    async def stop(self) -> None:
        await self.server.stop()
        await self.scheduler.close()


async def start_sandbox(settings: SandboxSettings) -> RunningSandbox:
    """Starts workers and a server for them; returns once both are ready."""
    scheduler = Scheduler(settings, visible_cuda_devices(settings))
    await scheduler.start()
    try:
        server = await start_server([binding(scheduler)], settings.server)
    except BaseException:
        await scheduler.close()
        raise
    return RunningSandbox(server, scheduler)


async def serve(settings: Settings) -> None:
    """Runs the sandbox server until SIGTERM, then drains and stops its workers."""
    scheduler = Scheduler(settings.sandbox, visible_cuda_devices(settings.sandbox))
    await scheduler.start()
    await serve_until_signalled([binding(scheduler)], settings.sandbox.server, on_stopped=scheduler.close)
