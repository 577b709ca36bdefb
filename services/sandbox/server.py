"""The SandboxService servicer: translates protos to scheduler calls and back, nothing more."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc

from drkernel.config import Settings
from drkernel.serving import ServiceBinding, serve_until_signalled
from drkernel.v1 import sandbox_pb2 as pb
from drkernel.v1 import sandbox_pb2_grpc
from services.sandbox.scheduler import Scheduler


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

        async def read_requests() -> None:
            async for request in request_iterator:
                task = asyncio.create_task(self.scheduler.evaluate(request, wait_for_room=True))
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


def cuda_device_count() -> int:
    """Visible CUDA devices, without creating a CUDA context in the server."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


async def serve(settings: Settings) -> None:
    """Runs the sandbox server until SIGTERM, then drains and stops its workers."""
    scheduler = Scheduler(settings.sandbox, cuda_device_count())
    await scheduler.start()
    servicer = SandboxServicer(scheduler)
    binding = ServiceBinding(
        pb.DESCRIPTOR.services_by_name["SandboxService"].full_name,
        lambda server: sandbox_pb2_grpc.add_SandboxServiceServicer_to_server(servicer, server),
    )
    await serve_until_signalled([binding], settings.sandbox.server, on_stopped=scheduler.close)
