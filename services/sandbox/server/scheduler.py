"""Queues evaluations and hands them to worker slots: one per GPU, or a pool on CPU.

The queue per device is bounded. A unary caller meets a full queue with ResourceExhausted and
a retry hint; a streaming caller simply waits for room, so its stream slows down instead of
failing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import prometheus_client

from drkernel.errors import FailedPrecondition, InvalidArgument, ResourceExhausted, Unavailable
from drkernel.logs import get_logger
from services.sandbox.server.isolation import Launcher, Mechanism
from services.sandbox.server.verdict import Result
from services.sandbox.server.worker import Worker, WorkerStatus, gather_quietly
from services.sandbox.settings import SandboxSettings
from services.sandbox.shared.evaluation import Device, EvaluationRequest
from services.sandbox.shared.task_source import parse_task

log = get_logger(__name__)

QUEUE_LENGTH = prometheus_client.Gauge("drkernel_sandbox_queue_length", "Requests waiting for a worker.", ["device"])
QUEUE_SECONDS = prometheus_client.Histogram(
    "drkernel_sandbox_queue_seconds",
    "Time requests waited for a worker.",
    ["device"],
    buckets=(0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
)
EVALUATIONS = prometheus_client.Counter(
    "drkernel_sandbox_evaluations_total", "Finished evaluations by verdict.", ["device", "verdict"]
)
EVALUATION_SECONDS = prometheus_client.Histogram(
    "drkernel_sandbox_evaluation_seconds",
    "Time spent judging, queueing excluded.",
    ["device"],
    buckets=(0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300, 900),
)
BUSY_WORKERS = prometheus_client.Gauge("drkernel_sandbox_busy_workers", "Workers evaluating now.", ["device"])
WORKERS = prometheus_client.Gauge("drkernel_sandbox_workers", "Worker slots.", ["device"])
QUEUE_CAPACITY = prometheus_client.Gauge("drkernel_sandbox_queue_capacity", "Requests that may wait.", ["device"])
REWARD = prometheus_client.Histogram(
    "drkernel_sandbox_reward", "Rewards handed out.", buckets=(0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 2.5)
)

_MAX_REQUEST_ID_BYTES = 256
_MAX_PUSHBACK_MS = 60_000
_MAX_TRIALS = 10_000


def validate_request(request: EvaluationRequest, settings: SandboxSettings) -> None:
    """Refuses malformed requests with a message that says what to change."""
    if len(request.request_id.encode()) > _MAX_REQUEST_ID_BYTES:
        raise InvalidArgument(f"request_id is longer than {_MAX_REQUEST_ID_BYTES} bytes")
    for name in ("reference_source", "candidate_source"):
        size = len(getattr(request, name).encode())
        if size > settings.max_source_bytes:
            raise InvalidArgument(f"{name} is {size} bytes; the limit is {settings.max_source_bytes}")
    if "\x00" in request.candidate_source or "\x00" in request.reference_source:
        raise InvalidArgument("sources must be text: a NUL byte was found")
    options = request.options
    for name in ("timeout_seconds", "atol", "rtol"):
        value = getattr(options, name)
        if not math.isfinite(value) or value < 0:
            raise InvalidArgument(f"options.{name} must be a finite number >= 0, got {value}")
    if options.timing_trials > _MAX_TRIALS or options.warmup_trials > _MAX_TRIALS:
        raise InvalidArgument(f"options.timing_trials and warmup_trials must be at most {_MAX_TRIALS}")
    if options.timing_trials and options.timing_trials < 3:
        raise InvalidArgument("options.timing_trials must be 0 (server default) or at least 3")
    parse_task(request.reference_source)


def visible_cuda_devices(settings: SandboxSettings) -> int:
    """The CUDA devices workers may use: none when the settings ask for CPU, else as many as a
    child process counts, so that the server neither imports torch (seconds) nor creates a CUDA
    context."""
    if settings.device == "cpu":
        return 0
    probe = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
    counted = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return int(counted.stdout)


@dataclass
class _Item:
    request: EvaluationRequest
    future: asyncio.Future[Result]
    enqueued: float


@dataclass(frozen=True)
class SandboxDescription:
    """What Describe reports: the workers, the queues and the isolation in force."""

    default_device: Device
    workers: list[WorkerStatus]
    queue_length: int
    queue_capacity: int
    isolation: list[Mechanism]


class Scheduler:
    """Owns the workers and their queues."""

    def __init__(self, settings: SandboxSettings, cuda_devices: int) -> None:
        self.settings = settings
        self.launcher = Launcher(settings.isolation)
        if settings.device == "cuda" and cuda_devices == 0:
            raise RuntimeError("sandbox.device is cuda but no CUDA device is visible")
        use_cuda = cuda_devices > 0 and settings.device != "cpu"
        self.default_device = "cuda" if use_cuda else "cpu"
        settings.work_dir.mkdir(parents=True, exist_ok=True)
        self.run_dir = run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=settings.work_dir))
        self.workers: dict[str, list[Worker]] = {
            "cpu": [Worker(i, "cpu", settings, self.launcher, run_dir) for i in range(settings.cpu_workers)]
        }
        if use_cuda:
            self.workers["cuda"] = [
                Worker(i + settings.cpu_workers, f"cuda:{i}", settings, self.launcher, run_dir, gpu_count=cuda_devices)
                for i in range(cuda_devices)
            ]
        self.queues = {device: asyncio.Queue[_Item](settings.queue_capacity) for device in self.workers}
        self._consumers: list[asyncio.Task[None]] = []
        # moving average of a worker's seconds per request (taken from the queue to answered), for retry hints
        self._recent_seconds = {device: settings.expected_evaluation_seconds for device in self.workers}
        self._closing = False

    async def start(self) -> None:
        """Starts every worker (in parallel) and the loops that feed them."""
        await asyncio.gather(*(w.start() for workers in self.workers.values() for w in workers))
        for device, workers in self.workers.items():
            WORKERS.labels(device).set(len(workers))
            QUEUE_CAPACITY.labels(device).set(self.queues[device].maxsize)
            for worker in workers:
                self._consumers.append(asyncio.create_task(self._consume(device, worker)))
        log.info("sandbox workers ready", workers=[w.id for ws in self.workers.values() for w in ws])

    def _device_for(self, request: EvaluationRequest) -> str:
        device = {Device.CPU: "cpu", Device.CUDA: "cuda"}.get(request.options.device, self.default_device)
        if device not in self.workers:
            raise FailedPrecondition(f"this server has no {device} workers")
        return device

    def timeout_for(self, request: EvaluationRequest) -> float:
        requested = request.options.timeout_seconds or self.settings.default_timeout_seconds
        return min(requested, self.settings.max_timeout_seconds)

    async def evaluate(self, request: EvaluationRequest, *, wait_for_room: bool = False) -> Result:
        """Validates, queues and awaits one evaluation."""
        if self._closing:
            raise Unavailable("the sandbox is shutting down")
        validate_request(request, self.settings)
        device = self._device_for(request)
        queue = self.queues[device]
        item = _Item(request, asyncio.get_running_loop().create_future(), time.monotonic())
        if wait_for_room:
            await queue.put(item)
        else:
            try:
                queue.put_nowait(item)
            except asyncio.QueueFull:
                raise ResourceExhausted(
                    f"all {len(self.workers[device])} {device} workers are busy "
                    f"and {queue.maxsize} requests are waiting",
                    self._pushback_ms(device),
                ) from None
        QUEUE_LENGTH.labels(device).set(queue.qsize())
        return await item.future

    def _pushback_ms(self, device: str) -> int:
        """A retry hint that lets the queue drain: the requests waiting and those in progress
        (every worker is busy when the queue is full) times a worker's recent seconds per
        request, with jitter so that refused clients do not all come back together."""
        workers = len(self.workers[device])
        drain_seconds = (self.queues[device].qsize() + workers) * self._recent_seconds[device] / workers
        hint_ms = max(self.settings.retry_pushback_ms, 1000 * drain_seconds)
        return int(min(hint_ms * random.uniform(1.0, 1.5), _MAX_PUSHBACK_MS))

    async def _consume(self, device: str, worker: Worker) -> None:
        queue = self.queues[device]
        while True:
            item = await queue.get()
            QUEUE_LENGTH.labels(device).set(queue.qsize())
            if item.future.done():  # the caller went away
                continue
            waited = time.monotonic() - item.enqueued
            QUEUE_SECONDS.labels(device).observe(waited)
            BUSY_WORKERS.labels(device).inc()
            started = time.monotonic()
            try:
                result = await worker.evaluate(item.request, self.timeout_for(item.request))
            except Exception as error:  # noqa: BLE001 - handed to the caller
                if not item.future.done():
                    item.future.set_exception(error)
                continue
            finally:
                BUSY_WORKERS.labels(device).dec()
            result = dataclasses.replace(result, queue_seconds=waited)
            EVALUATIONS.labels(device, f"VERDICT_{result.verdict.name}").inc()
            EVALUATION_SECONDS.labels(device).observe(result.evaluation_seconds)
            turnaround = time.monotonic() - started
            self._recent_seconds[device] += 0.2 * (turnaround - self._recent_seconds[device])
            REWARD.observe(result.reward)
            if not item.future.done():
                item.future.set_result(result)

    def describe(self) -> SandboxDescription:
        return SandboxDescription(
            default_device=Device.CUDA if self.default_device == "cuda" else Device.CPU,
            workers=[w.status() for ws in self.workers.values() for w in ws],
            queue_length=sum(q.qsize() for q in self.queues.values()),
            queue_capacity=sum(q.maxsize for q in self.queues.values()),
            isolation=self.launcher.mechanisms(),
        )

    async def close(self) -> None:
        """Refuses new work and stops every process; call once the server has drained."""
        self._closing = True
        for consumer in self._consumers:
            consumer.cancel()
        await gather_quietly(*self._consumers)
        for queue in self.queues.values():
            while not queue.empty():
                item = queue.get_nowait()
                if not item.future.done():
                    item.future.set_exception(Unavailable("the sandbox shut down before this request ran"))
        await gather_quietly(*(w.close() for ws in self.workers.values() for w in ws))
        shutil.rmtree(self.run_dir, ignore_errors=True)
