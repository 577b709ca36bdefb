"""A worker slot in the server: one judge process and one warm candidate process per device.

The judge lives across evaluations (replaced after a crash, a timeout or a set number of
jobs). A candidate process serves exactly one evaluation: the next one is started, sandboxed
and warmed up while the current evaluation runs, so that every evaluation gets a fresh
process without paying its start-up. The worker enforces the time limit by killing the
candidate's whole sandbox, and explains a crashed candidate from its exit status and output.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import os
import select
import shutil
import signal
import socket
import time
from collections import deque
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import prometheus_client

from drkernel.errors import InvalidArgument, ResourceExhausted
from drkernel.logs import get_logger
from services.sandbox.server.isolation import Launcher, ProcessSpec
from services.sandbox.server.kernel_cache import KernelCache, triton_installation_key
from services.sandbox.server.uids import claim_uids, clear_uid
from services.sandbox.server.verdict import Ending, ProcessOutcome, Result, combine
from services.sandbox.settings import SandboxSettings
from services.sandbox.shared.evaluation import Device, EvaluationRequest, Judgement
from services.sandbox.wire.framing import ProtocolError, Shutdown, receive, send
from services.sandbox.wire.server_judge import (
    JUDGE_REPLY,
    JUDGEMENT,
    REQUEST,
    CandidateEnded,
    CandidateStarted,
    EndCandidate,
    Job,
    JobDone,
    JudgeReady,
)

log = get_logger(__name__)

CANDIDATE_DEATHS = prometheus_client.Counter(
    "drkernel_sandbox_candidate_deaths_total", "Candidate processes that died mid-evaluation.", ["device"]
)
JUDGE_RESTARTS = prometheus_client.Counter(
    "drkernel_sandbox_judge_restarts_total", "Judge processes started after the first.", ["device"]
)
TIMEOUTS = prometheus_client.Counter(
    "drkernel_sandbox_timeouts_total", "Evaluations stopped at their time limit.", ["device"]
)

_START_TIMEOUT_SECONDS = 300.0
_JUDGE_GRACE_SECONDS = 15.0
_REAP_TIMEOUT_SECONDS = 10.0
_OUTPUT_TAIL_BYTES = 4096


class OutputTail:
    """Drains a process's output continuously, keeping only the last bytes."""

    def __init__(self, stream: asyncio.StreamReader | None, limit: int) -> None:
        self._chunks = bytearray()
        self._limit = limit
        self._task = asyncio.create_task(self._drain(stream)) if stream is not None else None

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self._chunks += chunk
            del self._chunks[: max(0, len(self._chunks) - self._limit)]

    async def text(self) -> str:
        if self._task is not None:
            await asyncio.wait({self._task}, timeout=2)
        return self._chunks.decode(errors="replace")


def _has_spoken(sock: socket.socket, timeout: float) -> bool:
    """Whether the process at the other end sent something (its Ready, which is left for the
    judge to read) or hung up, within ``timeout`` seconds."""
    readable, _, _ = select.select([sock], [], [], timeout)
    return bool(readable)


@dataclass
class _Process:
    """A confined process, our end of its socket, and its private directory."""

    process: asyncio.subprocess.Process
    sock: socket.socket
    scratch: Path
    output: OutputTail
    uid: int
    started: float = field(default_factory=time.monotonic)

    async def kill(self) -> int:
        """Kills the process's whole session (its sandbox) and returns its exit status.

        Bounded: a process the kernel cannot reap at once (stuck in a driver call) is logged
        and left behind rather than stalling the evaluation or the shutdown that kills it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # its own session: bwrap and all inside
        try:
            return await asyncio.wait_for(self.process.wait(), _REAP_TIMEOUT_SECONDS)
        except TimeoutError:
            log.error("process survived SIGKILL", pid=self.process.pid, waited_seconds=_REAP_TIMEOUT_SECONDS)
            return -signal.SIGKILL
        finally:
            self.sock.close()


@dataclass(frozen=True)
class CorePlan:
    """The host cores a GPU worker's processes run on (empty: not pinned)."""

    judge: tuple[int, ...]
    candidate: tuple[int, ...]  # the candidate being judged
    warming: tuple[int, ...]  # warm candidates while they start CUDA and CUPTI


def plan_cores(cores: Sequence[int], gpu_index: int, gpu_count: int) -> CorePlan:
    """Two cores each for the judge and the judged candidate of GPU ``gpu_index``, so that the
    host side of launch-bound kernels is timed on quiet cores; warm candidates start up on the
    cores no GPU worker pins (seconds of CPU per process, which would otherwise compete with a
    timed evaluation) and move to the candidate cores once ready. No pinning without enough cores."""
    ordered = sorted(cores)
    first = 4 * gpu_index
    if len(ordered) < first + 4:
        return CorePlan((), (), ())
    candidate = tuple(ordered[first + 2 : first + 4])
    return CorePlan(tuple(ordered[first : first + 2]), candidate, tuple(ordered[4 * gpu_count :]) or candidate)


@dataclass(frozen=True)
class WorkerStatus:
    """One worker slot as Describe reports it."""

    id: str
    device: Device
    device_name: str
    busy: bool
    evaluations: int


def _judgement_of(message: JudgeReady | JobDone | EndCandidate, payload: bytearray) -> tuple[JobDone, Judgement | None]:
    """The judge's answer to a job, validated: JobDone, and the judgement unless there is none
    (a bad task, or not judged). ProtocolError for anything else."""
    if not isinstance(message, JobDone):
        raise ProtocolError(f"expected job_done, got {message}")
    if message.bad_task or message.not_judged:
        return message, None
    try:
        return message, JUDGEMENT.validate_json(payload)
    except ValueError as error:
        raise ProtocolError(f"malformed judgement: {str(error)[:500]}") from error


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def describe_exit(returncode: int, sandboxed: bool) -> str:
    """How a process ended, in words (bubblewrap reports a signal as 128 + its number)."""
    number = -returncode if returncode < 0 else returncode - 128 if sandboxed and returncode > 128 else 0
    if number:
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"was killed by {name}"
    return f"exited with status {returncode}"


class Worker:
    """One evaluation at a time on one device."""

    _ids = itertools.count()

    def __init__(
        self,
        slot: int,
        device: str,
        settings: SandboxSettings,
        launcher: Launcher,
        run_dir: Path,
        gpu_count: int = 0,
    ) -> None:
        self.device = device
        self.id = device if device.startswith("cuda") else f"cpu:{slot}"
        self.kind = "cuda" if device.startswith("cuda") else "cpu"
        self.settings = settings
        self.launcher = launcher
        self.kernel_cache = KernelCache(
            settings.work_dir / "triton-cache", settings.kernel_cache_bytes, settings.kernel_cache_entry_bytes
        )
        self.root = run_dir / self.id.replace(":", "-")
        self.device_name = ""
        self.busy = False
        self.evaluations = 0
        self._judge: _Process | None = None
        self._judge_jobs = 0
        self._judge_starts = 0
        self.spares = settings.spare_candidates(self.kind)  # how many warm candidates to keep
        self._spares: deque[asyncio.Task[_Process]] = deque()
        self._cores = (
            plan_cores(os.sched_getaffinity(0), slot - settings.cpu_workers, gpu_count)
            if self.kind == "cuda"
            else CorePlan((), (), ())
        )
        isolation = settings.isolation
        # The judge's uid, and candidate uids used in turn (the warm ones, the one being judged,
        # and one resting): RLIMIT_NPROC counts a uid's processes, so a candidate that filled it
        # (a fork bomb, dying after its evaluation) must not share it with the next one, which
        # would fail to start threads (EAGAIN). What is left of a uid dies before its next use.
        self._uids = claim_uids(isolation.uid_lock_dir, isolation.uid_base, isolation.uid_count, needed=self.spares + 3)
        self._judge_uid, *candidate_uids = self._uids.uids
        self._free_uids: deque[int] = deque(candidate_uids)

    # Processes ----------------------------------------------------------------------------

    async def _spawn(
        self,
        module: str,
        args: tuple[str, ...],
        scratch: Path,
        uid: int,
        memory_bytes: int | None,
        cpus: tuple[int, ...],
    ) -> _Process:
        await self._clear(uid)
        ours, theirs = socket.socketpair()
        spec = ProcessSpec(
            module=module,
            args=(*args, "--fd", str(theirs.fileno())),
            scratch=scratch,
            device="cpu" if self.device == "cpu" else self.device,
            uid=uid,
            pass_fds=(theirs.fileno(),),
            memory_bytes=memory_bytes,
            cpus=cpus,
        )
        argv, env, cwd = self.launcher.command(spec)
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                env=env,
                cwd=cwd,
                pass_fds=spec.pass_fds,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            theirs.close()
        return _Process(process, ours, scratch, OutputTail(process.stdout, _OUTPUT_TAIL_BYTES), uid)

    def _memory_bytes(self, limit: int) -> int | None:
        """An address-space limit on CPU; none on a GPU, where it would break the CUDA driver."""
        return limit if self.device == "cpu" else None

    async def _start_judge(self) -> _Process:
        scratch = self.root / "judge"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        (scratch / "settings.json").write_text(self.settings.model_dump_json())
        device = "cuda" if self.device != "cpu" else "cpu"
        judge = await self._spawn(
            "services.sandbox.judge",
            ("--settings", "settings.json", "--device", device),
            scratch,
            self._judge_uid,
            memory_bytes=self._memory_bytes(self.settings.isolation.judge_memory_bytes),
            cpus=self._cores.judge,
        )
        try:
            ready, _ = await asyncio.wait_for(
                asyncio.to_thread(receive, judge.sock, JUDGE_REPLY, 0), _START_TIMEOUT_SECONDS
            )
        except (TimeoutError, ProtocolError, OSError) as error:
            await judge.kill()
            raise RuntimeError(
                f"judge on {self.id} did not start: {error}; output: {await judge.output.text()}"
            ) from error
        assert isinstance(ready, JudgeReady)
        self.device_name = ready.device_name
        if self._judge_starts:
            JUDGE_RESTARTS.labels(self.kind).inc()
        self._judge_starts += 1
        self._judge_jobs = 0
        return judge

    async def _spawn_candidate(self) -> _Process:
        scratch = self.root / f"candidate-{next(self._ids)}"
        shutil.rmtree(scratch, ignore_errors=True)
        args = (
            "--device",
            "cuda" if self.device != "cpu" else "cpu",
            "--l2-flush-bytes",
            str(self.settings.timing.l2_flush_bytes),
            "--triton-key",
            await asyncio.to_thread(triton_installation_key),
        )
        if self.launcher.seccomp:
            args += ("--seccomp",)
        cpus = self._cores.candidate
        if self.device != "cpu" and self.settings.warm_cuda:
            args += ("--warm-cuda",)
            if self._cores.warming != cpus:
                args += ("--run-cpus", ",".join(map(str, cpus)))
                cpus = self._cores.warming
        uid = self._free_uids.popleft()  # the least recently used: its last process is long gone
        try:
            return await self._spawn(
                "services.sandbox.candidate",
                args,
                scratch,
                uid,
                memory_bytes=self._memory_bytes(self.settings.isolation.memory_bytes),
                cpus=cpus,
            )
        except BaseException:
            self._free_uids.append(uid)
            raise

    async def _clear(self, uid: int) -> None:
        """Kills what still runs as a sandbox uid and waits until it is gone (uids.clear_uid),
        where each sandbox has a uid of its own (a root server; with user namespaces, every
        sandbox runs as the server's uid and only its own process is waited for)."""
        if self.launcher.is_root:
            left = await asyncio.to_thread(clear_uid, uid, _REAP_TIMEOUT_SECONDS)
            if left:
                log.error("processes of a sandbox uid survived SIGKILL", uid=uid, pids=left[:20], count=len(left))

    async def _kill_candidate(self, candidate: _Process) -> None:
        """Kills a candidate's sandbox and gives its uid back, last in line for reuse."""
        await candidate.kill()
        self._free_uids.append(candidate.uid)

    def _prepare_spares(self) -> None:
        while len(self._spares) < self.spares:
            self._spares.append(asyncio.create_task(self._spawn_candidate()))

    async def _take_candidate(self) -> _Process:
        """The oldest warm candidate whose process is still alive (one that died while
        waiting is replaced), or a new one when none is kept warm."""
        while True:
            if not self._spares:  # none kept warm
                self._spares.append(asyncio.create_task(self._spawn_candidate()))
            candidate = await self._spares.popleft()
            if not self._spares:
                self._prepare_spares()  # none left warm: start one now rather than after
            if candidate.process.returncode is None:
                return candidate
            log.warning("warm candidate died while waiting", worker=self.id, output=await candidate.output.text())
            await self._kill_candidate(candidate)

    async def start(self) -> None:
        """Starts the judge and the warm candidates; returns once the judge is up and the first
        warm candidate, if any are kept, has finished starting (on a GPU its CUDA context and
        CUPTI, seconds), so that a server says SERVING only when its first evaluation pays no
        start-up."""
        self._prepare_spares()
        self._judge = await self._start_judge()
        if not self._spares:
            return
        first = await self._spares[0]
        if not await asyncio.to_thread(_has_spoken, first.sock, _START_TIMEOUT_SECONDS):
            log.warning("warm candidate still starting", worker=self.id, waited_seconds=_START_TIMEOUT_SECONDS)

    async def close(self) -> None:
        """Stops every process of this slot."""
        while self._spares:
            spare = await self._spares.popleft()
            await self._kill_candidate(spare)
        if self._judge is not None:
            with contextlib.suppress(OSError):
                send(self._judge.sock, Shutdown())
            await self._judge.kill()
        shutil.rmtree(self.root, ignore_errors=True)
        self._uids.release()

    # Compiled-kernel cache -------------------------------------------------------------------

    def _restore_cache(self, candidate_source: str, candidate: _Process) -> None:
        """Gives a new process the kernels compiled for the same source before: only an
        identical candidate ever reads what a candidate wrote."""
        owner = candidate.uid if self.launcher.is_root else None
        self.kernel_cache.restore(candidate_source, candidate.scratch / ".triton", owner)

    def _save_cache(self, candidate_source: str, candidate: _Process) -> None:
        self.kernel_cache.save(candidate_source, candidate.scratch / ".triton")

    # Evaluation ---------------------------------------------------------------------------

    async def evaluate(self, request: EvaluationRequest, timeout_seconds: float) -> Result:
        """Judges one request within the time limit."""
        self.busy = True
        started = time.monotonic()
        candidate = await self._take_candidate()
        try:
            if self._judge is None or self._judge.process.returncode is not None:
                self._judge = await self._start_judge()
            judge = self._judge
            await asyncio.to_thread(self._restore_cache, request.candidate_source, candidate)
            await asyncio.to_thread(send, judge.sock, Job(), REQUEST.dump_json(request), [candidate.sock.fileno()])
            judgement, outcome = await self._await_judgement(judge, candidate, request, timeout_seconds)
        finally:
            await self._kill_candidate(candidate)
            self._prepare_spares()  # after, not during, the evaluation it would disturb
            await asyncio.to_thread(self._save_cache, request.candidate_source, candidate)
            shutil.rmtree(candidate.scratch, ignore_errors=True)
            self.busy = False
        self.evaluations += 1
        self._judge_jobs += 1
        if self._judge is not None and self._judge_jobs >= self.settings.judge_max_evaluations:
            await self._retire_judge()
        result = combine(judgement, outcome, self.settings.reward)
        return dataclasses.replace(result, evaluation_seconds=time.monotonic() - started)

    async def _await_judgement(
        self, judge: _Process, candidate: _Process, request: EvaluationRequest, timeout_seconds: float
    ) -> tuple[Judgement, ProcessOutcome]:
        """The judge's judgement (an empty one when a timed-out judge did not answer) and how
        the candidate's process ended: within the limit, killed at it, or dead on its own."""
        started = asyncio.Event()
        reply: asyncio.Future[tuple[JobDone, Judgement | None]] = asyncio.ensure_future(
            self._judge_reply(judge, candidate, started)
        )
        # Read here or below; when this call is cancelled (Ctrl-C, shutdown) and the judge then
        # dies, nobody else would, and asyncio would print the error's traceback.
        reply.add_done_callback(_retrieved)
        timed_out = not await _answered_in_time(reply, started, timeout_seconds)
        if timed_out:
            TIMEOUTS.labels(self.kind).inc()
            await candidate.kill()
            await asyncio.wait({reply}, timeout=_JUDGE_GRACE_SECONDS)
        if not reply.done() or reply.exception() is not None:
            await self._retire_judge()
            await asyncio.wait({reply}, timeout=_JUDGE_GRACE_SECONDS)
            if not timed_out:  # our fault, not the candidate's: the caller gets INTERNAL and may retry
                log.error("judge failed", worker=self.id, output=await judge.output.text())
                raise RuntimeError(
                    f"the judge process on {self.id} failed during this evaluation; it has been replaced"
                )
            judgement = Judgement(request_id=request.request_id, device_name=self.device_name)
        else:
            message, judged = reply.result()
            if message.bad_task:
                raise InvalidArgument(message.bad_task)
            if message.not_judged:  # the caller may retry: say why where operators look
                log.warning(
                    "evaluation not judged", worker=self.id, request_id=request.request_id, reason=message.not_judged
                )
                raise ResourceExhausted(message.not_judged, self.settings.retry_pushback_ms)
            assert judged is not None  # a job neither refused nor unjudged was judged
            judgement = judged
        if timed_out:
            limit = f"the evaluation exceeded its limit of {timeout_seconds:g} s and the candidate was killed"
            return judgement, ProcessOutcome(Ending.TIMED_OUT, limit)
        if judgement.candidate_lost:
            return judgement, await self._explain_death(candidate)
        return judgement, ProcessOutcome(Ending.FINISHED)

    async def _judge_reply(
        self, judge: _Process, candidate: _Process, started: asyncio.Event
    ) -> tuple[JobDone, Judgement | None]:
        """The judge's answer to a job. Before it, the judge may ask for the candidate's sandbox
        to be ended (to time the reference with nothing of the candidate left): it is killed,
        and the judge told so once it is gone, every process of it: the kernel tears a PID
        namespace down after the sandbox's own process is reaped, and a reference timed while a
        candidate's CUDA context was still being torn down ran up to 14% slower. The judge also
        says when the candidate's process has started: ``started`` is set (the limit runs from
        there)."""
        while True:
            message, payload = await asyncio.to_thread(receive, judge.sock, JUDGE_REPLY, self.settings.max_output_bytes)
            if isinstance(message, CandidateStarted):
                started.set()
                continue
            if not isinstance(message, EndCandidate):
                return _judgement_of(message, payload)
            await candidate.kill()
            await self._clear(candidate.uid)
            await asyncio.to_thread(send, judge.sock, CandidateEnded())

    async def _explain_death(self, candidate: _Process) -> ProcessOutcome:
        CANDIDATE_DEATHS.labels(self.kind).inc()
        try:
            returncode = await asyncio.wait_for(candidate.process.wait(), 5)
        except TimeoutError:
            returncode = await candidate.kill()
        output = (await candidate.output.text()).strip()
        how = describe_exit(returncode, self.launcher.namespaces)
        detail = f"the candidate's process {how}" + (f"; its last output:\n{output[-2000:]}" if output else "")
        return ProcessOutcome(Ending.DIED, detail)

    async def _retire_judge(self) -> None:
        if self._judge is not None:
            await self._judge.kill()
            self._judge = None

    def status(self) -> WorkerStatus:
        return WorkerStatus(
            self.id,
            Device.CPU if self.device == "cpu" else Device.CUDA,
            self.device_name,
            self.busy,
            self.evaluations,
        )


async def _answered_in_time(reply: asyncio.Future[Any], started: asyncio.Event, timeout_seconds: float) -> bool:
    """Whether the judge answered within the time limit. The limit is the candidate's own, so
    it runs from the judge's word that the candidate's process has started: a process still
    starting (importing PyTorch takes seconds on a loaded machine, and a one-off evaluation
    keeps none warm) would otherwise spend it, and a short limit would end it before its code
    was loaded. A job that ends before the candidate is needed (a syntax error) never waits
    for it."""
    starting = asyncio.ensure_future(started.wait())
    try:
        await asyncio.wait({reply, starting}, timeout=_START_TIMEOUT_SECONDS, return_when=asyncio.FIRST_COMPLETED)
    finally:
        starting.cancel()
    if not reply.done():
        await asyncio.wait({reply}, timeout=timeout_seconds)
    return reply.done()


async def gather_quietly(*tasks: Awaitable[object]) -> None:
    """Awaits tasks, logging instead of raising their failures (used at shutdown)."""
    for result in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            log.warning("shutdown step failed", error=str(result))
