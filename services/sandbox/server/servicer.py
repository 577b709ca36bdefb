"""The SandboxService servicer: translates protos to scheduler calls and back, nothing more."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar

import grpc

from drkernel import __version__
from drkernel.config import Settings
from drkernel.errors import InvalidArgument
from drkernel.sections import SecuritySettings
from drkernel.serving import RunningServer, ServiceBinding, serve_until_signalled, start_server, status_for
from drkernel.v1 import sandbox_pb2 as pb
from drkernel.v1 import sandbox_pb2_grpc
from services.profiler import summary_proto
from services.sandbox.server.scheduler import SandboxDescription, Scheduler, visible_cuda_devices
from services.sandbox.server.verdict import Result
from services.sandbox.settings import SandboxSettings
from services.sandbox.shared.evaluation import (
    CorrectnessProfile,
    Device,
    EvaluationOptions,
    EvaluationRequest,
    RuntimeStats,
    TimingReport,
)

_Enum = TypeVar("_Enum", bound=IntEnum)


def _known(kind: type[_Enum], value: int, name: str) -> _Enum:
    """``value`` as a member of ``kind``; InvalidArgument for one this server does not know."""
    try:
        return kind(value)
    except ValueError:
        raise InvalidArgument(f"options.{name} {value} is not a known {kind.__name__}") from None


def request_from_proto(request: pb.EvaluateRequest) -> EvaluationRequest:
    """The request as the sandbox handles it."""
    options = request.options
    device = _known(Device, options.device, "device")
    profile = _known(CorrectnessProfile, options.correctness_profile, "correctness_profile")
    return EvaluationRequest(
        request_id=request.request_id,
        reference_source=request.reference_source,
        candidate_source=request.candidate_source,
        options=EvaluationOptions(
            timeout_seconds=options.timeout_seconds,
            device=device,
            timing_trials=options.timing_trials,
            warmup_trials=options.warmup_trials,
            atol=options.atol,
            rtol=options.rtol,
            seed=options.seed if options.HasField("seed") else None,
            skip_timing=options.skip_timing,
            skip_profile=options.skip_profile,
            correctness_profile=profile,
        ),
    )


def _stats_proto(stats: RuntimeStats | None) -> pb.RuntimeStats | None:
    return (
        None
        if stats is None
        else pb.RuntimeStats(
            trials=stats.trials,
            median_us=stats.median_us,
            mean_us=stats.mean_us,
            trimmed_mean_us=stats.trimmed_mean_us,
            min_us=stats.min_us,
            max_us=stats.max_us,
            stdev_us=stats.stdev_us,
            coefficient_of_variation=stats.coefficient_of_variation,
        )
    )


def _timing_proto(timing: TimingReport | None) -> pb.TimingReport | None:
    return (
        None
        if timing is None
        else pb.TimingReport(
            valid=timing.valid,
            invalid_reason=timing.invalid_reason,
            reference=_stats_proto(timing.reference),
            candidate=_stats_proto(timing.candidate),
            warmup_trials=timing.warmup_trials,
            method=timing.method,
            calls_per_trial=timing.calls_per_trial,
            cuda_graph=timing.cuda_graph,
            late_device_work_us=timing.late_device_work_us,
        )
    )


def response_proto(result: Result) -> pb.EvaluateResponse:
    """The result as the API returns it."""
    judgement = result.judgement
    return pb.EvaluateResponse(
        request_id=judgement.request_id,
        verdict=f"VERDICT_{result.verdict.name}",
        reward=result.reward,
        speedup=judgement.speedup,
        hack_reasons=result.hack_reasons,
        error=result.error,
        feedback=result.feedback,
        furthest_stage=f"STAGE_{judgement.furthest_stage.name}",
        stages=[
            pb.StageResult(
                stage=f"STAGE_{s.stage.name}",
                status=f"STAGE_STATUS_{s.status.name}",
                elapsed_seconds=s.elapsed_seconds,
                detail=s.detail,
            )
            for s in judgement.stages
        ],
        checks=[
            pb.CorrectnessCheck(
                variant=f"INPUT_VARIANT_{c.variant.name}",
                description=c.description,
                passed=c.passed,
                skipped=c.skipped,
                max_abs_error=c.max_abs_error,
                max_rel_error=c.max_rel_error,
                rel_l2_error=c.rel_l2_error,
                atol=c.atol,
                rtol=c.rtol,
                message=c.message,
                elapsed_seconds=c.elapsed_seconds,
            )
            for c in judgement.checks
        ],
        timing=_timing_proto(judgement.timing),
        triton_kernels=[
            pb.TritonKernel(name=k.name, launches=k.launches, programs=k.programs) for k in judgement.triton_kernels
        ],
        evaluation_seconds=result.evaluation_seconds,
        queue_seconds=result.queue_seconds,
        device_name=judgement.device_name,
        coverage=judgement.coverage,
        profile=summary_proto(judgement.profile) if judgement.profile is not None else None,
        correctness_profile=f"CORRECTNESS_PROFILE_{judgement.correctness_profile.name}",
    )


def description_proto(description: SandboxDescription) -> pb.DescribeResponse:
    """What Describe returns."""
    return pb.DescribeResponse(
        version=__version__,
        default_device=f"DEVICE_{description.default_device.name}",
        workers=[
            pb.WorkerInfo(
                id=w.id,
                device=f"DEVICE_{w.device.name}",
                device_name=w.device_name,
                busy=w.busy,
                evaluations=w.evaluations,
            )
            for w in description.workers
        ],
        queue_length=description.queue_length,
        queue_capacity=description.queue_capacity,
        isolation=[pb.IsolationMechanism(name=m.name, active=m.active, detail=m.detail) for m in description.isolation],
    )


class SandboxServicer(sandbox_pb2_grpc.SandboxServiceServicer):
    """Evaluate, EvaluateStream and Describe over one scheduler."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    async def Evaluate(self, request: pb.EvaluateRequest, context: grpc.aio.ServicerContext) -> pb.EvaluateResponse:
        return response_proto(await self.scheduler.evaluate(request_from_proto(request)))

    async def EvaluateStream(
        self, request_iterator: AsyncIterator[pb.EvaluateRequest], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.EvaluateResponse]:
        finished: asyncio.Queue[asyncio.Task[pb.EvaluateResponse] | None] = asyncio.Queue()
        pending: set[asyncio.Task[pb.EvaluateResponse]] = set()

        async def evaluate(request: pb.EvaluateRequest) -> pb.EvaluateResponse:
            try:
                return response_proto(await self.scheduler.evaluate(request_from_proto(request), wait_for_room=True))
            except Exception as error:  # noqa: BLE001 - answered in the stream, not by ending it
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
        return description_proto(self.scheduler.describe())


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


async def start_sandbox(settings: SandboxSettings, security: SecuritySettings) -> RunningSandbox:
    """Starts workers and a server for them; returns once both are ready."""
    scheduler = Scheduler(settings, visible_cuda_devices(settings))
    await scheduler.start()
    try:
        server = await start_server([binding(scheduler)], settings.server, security)
    except BaseException:
        await scheduler.close()
        raise
    return RunningSandbox(server, scheduler)


async def serve(settings: Settings) -> None:
    """Runs the sandbox server until SIGTERM, then drains and stops its workers."""
    scheduler = Scheduler(settings.sandbox, visible_cuda_devices(settings.sandbox))
    await scheduler.start()
    await serve_until_signalled(
        [binding(scheduler)], settings.sandbox.server, settings.security, on_stopped=scheduler.close
    )
