"""The TrainerService servicer: translates protos to run manager calls and back, nothing more."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from datetime import datetime

import grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.timestamp_pb2 import Timestamp

from drkernel.v1 import trainer_pb2 as pb
from drkernel.v1 import trainer_pb2_grpc
from services.trainer.runs import Checkpoint, RunInfo, RunManager, RunState, StepMetrics

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["TrainerService"].full_name

_STATE = {
    RunState.PENDING: pb.RUN_STATE_PENDING,
    RunState.RUNNING: pb.RUN_STATE_RUNNING,
    RunState.SUCCEEDED: pb.RUN_STATE_SUCCEEDED,
    RunState.FAILED: pb.RUN_STATE_FAILED,
    RunState.STOPPED: pb.RUN_STATE_STOPPED,
}
_UNSIGNED_MAX = {FieldDescriptor.TYPE_UINT32: 2**32 - 1, FieldDescriptor.TYPE_UINT64: 2**64 - 1}
# StepMetrics' named fields (step and extra aside), each with its largest value if an integer.
_FIELDS: dict[str, int | None] = {
    field.name: _UNSIGNED_MAX.get(field.type)
    for field in pb.StepMetrics.DESCRIPTOR.fields
    if field.name not in ("step", "extra")
}


def _timestamp(moment: datetime | None) -> Timestamp | None:
    if moment is None:
        return None
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def step_metrics(record: StepMetrics) -> pb.StepMetrics:
    """The proto of a metrics line: known keys in their fields, every other number in extra.
    An integer field whose value is no integer it can hold goes to extra too, so that an odd
    line is shown as written instead of failing the call."""
    message = pb.StepMetrics(step=record.step)
    for key, value in record.values.items():
        if key not in _FIELDS:
            message.extra[key] = value
            continue
        limit = _FIELDS[key]
        if limit is None:
            setattr(message, key, value)
        elif math.isfinite(value) and value.is_integer() and 0 <= value <= limit:
            setattr(message, key, int(value))
        else:
            message.extra[key] = value
    return message


def run_message(info: RunInfo) -> pb.Run:
    return pb.Run(
        run_id=info.run_id,
        name=info.name,
        state=_STATE[info.state],
        steps_done=info.steps_done,
        steps_total=info.steps_total,
        latest_metrics=step_metrics(info.latest) if info.latest else None,
        error=info.error,
        out_dir=str(info.out_dir),
        start_time=_timestamp(info.started),
        finish_time=_timestamp(info.finished),
    )


def checkpoint_message(checkpoint: Checkpoint) -> pb.Checkpoint:
    return pb.Checkpoint(
        step=checkpoint.step,
        path=str(checkpoint.path),
        hf_path=str(checkpoint.hf_path) if checkpoint.hf_path else "",
        size_bytes=checkpoint.size_bytes,
        create_time=_timestamp(checkpoint.created),
    )


class TrainerServicer(trainer_pb2_grpc.TrainerServiceServicer):
    """StartRun, GetRun, ListRuns, WatchRun, StopRun and ListCheckpoints over one run manager."""

    def __init__(self, manager: RunManager) -> None:
        self._manager = manager

    async def StartRun(self, request: pb.StartRunRequest, context: grpc.aio.ServicerContext) -> pb.StartRunResponse:
        info = await self._manager.start(
            request.config_yaml,
            steps=request.steps if request.HasField("steps") else None,
            run_id=request.run_id,
            resume_from=request.resume_from,
        )
        return pb.StartRunResponse(run_id=info.run_id, out_dir=str(info.out_dir))

    async def GetRun(self, request: pb.GetRunRequest, context: grpc.aio.ServicerContext) -> pb.GetRunResponse:
        return pb.GetRunResponse(run=run_message(self._manager.get(request.run_id)))

    async def ListRuns(self, request: pb.ListRunsRequest, context: grpc.aio.ServicerContext) -> pb.ListRunsResponse:
        return pb.ListRunsResponse(runs=[run_message(info) for info in self._manager.list_runs()])

    async def WatchRun(
        self, request: pb.WatchRunRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.WatchRunResponse]:
        async for record in self._manager.watch(request.run_id, request.from_step):
            yield pb.WatchRunResponse(metrics=step_metrics(record))

    async def StopRun(self, request: pb.StopRunRequest, context: grpc.aio.ServicerContext) -> pb.StopRunResponse:
        return pb.StopRunResponse(run=run_message(await self._manager.stop(request.run_id)))

    async def ListCheckpoints(
        self, request: pb.ListCheckpointsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListCheckpointsResponse:
        found = await self._manager.checkpoints(request.run_id)
        return pb.ListCheckpointsResponse(checkpoints=[checkpoint_message(c) for c in found])
