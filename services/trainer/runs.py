"""The run manager: training runs as supervised subprocesses, plain Python without gRPC.

Each run is one ``drkernel train`` process (torchrun's launcher when a run has several
processes) started in a session and process group of its own, so that a signal meant for the
server never reaches it by accident and a forced stop can reach all of it. Its directory under
``runs_dir`` holds what the job writes (config.yaml, metrics.jsonl, checkpoints/) and what the
manager writes: ``run.json`` (the run's state, so that runs outlive the server),
``config.submitted.yaml`` (the config as submitted), the job's ``stdout.log`` and
``stderr.log``, and ``run.lock``, locked (flock) by the job's process for as long as it lives:
a server that restarts after a crash can tell that a run's process is still running without
it, and refuses to start a second one in the same directory.

The job's contract: one JSON object per finished step appended to metrics.jsonl, complete
checkpoints only as checkpoints/step_N, exit 0 when done or when stopped by SIGTERM (after
finishing or abandoning its step and checkpointing), nonzero on failure with one line on
stderr. The manager only reads complete lines of metrics.jsonl, so a line being written is
picked up once it ends, and a malformed line is logged and skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from drkernel.errors import FailedPrecondition, InvalidArgument, NotFound, ResourceExhausted
from drkernel.locks import try_lock
from drkernel.logs import get_logger
from services.trainer import metrics
from services.trainer.run_config import parse_run_config
from services.trainer.settings import TrainerSettings

log = get_logger(__name__)

RUN_ID = re.compile(r"[a-z0-9-]{1,63}")
STATE_FILE = "run.json"
LOCK_FILE = "run.lock"
SUBMITTED_CONFIG = "config.submitted.yaml"
METRICS_FILE = "metrics.jsonl"
CHECKPOINT_DIR = re.compile(r"step_(\d+)")
# gRPC reads a negative retry pushback as "do not retry": a slot frees only when a run ends,
# hours away, so a client's automatic retries would only waste its attempts.
NO_RETRY_MS = -1
_ERROR_TAIL_BYTES = 64 * 2**10
_MAX_ERROR_CHARS = 2000
_MAX_STEP = 2**32 - 1


class RunState(enum.Enum):
    """Where a run is in its life (the proto's RunState)."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STOPPED = "stopped"

    @property
    def ended(self) -> bool:
        return self in (RunState.SUCCEEDED, RunState.FAILED, RunState.STOPPED)


@dataclass(frozen=True)
class StepMetrics:
    """One metrics.jsonl line: its step and every other numeric key, unknown ones included."""

    step: int
    values: Mapping[str, float]


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint directory of a run."""

    step: int
    path: Path
    hf_path: Path | None
    size_bytes: int
    created: datetime


@dataclass(frozen=True)
class RunInfo:
    """A snapshot of a run for callers; the manager's own record stays private."""

    run_id: str
    name: str
    state: RunState
    steps_done: int
    steps_total: int
    latest: StepMetrics | None
    error: str
    out_dir: Path
    started: datetime | None
    finished: datetime | None


def parse_metrics_line(line: bytes) -> StepMetrics | None:
    """A step's metrics from one line, or None when the line is not a JSON object with an
    integer ``step``. Non-numeric values are dropped (booleans count as non-numeric)."""
    try:
        data = json.loads(line)
    except ValueError:  # json.JSONDecodeError and UnicodeDecodeError are both ValueErrors
        return None
    if not isinstance(data, dict):
        return None
    step = data.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= _MAX_STEP:
        return None
    values = {
        key: float(value)
        for key, value in data.items()
        if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool)
    }
    return StepMetrics(step, values)


class MetricsTail:
    """Reads what was appended to a metrics.jsonl since the last read, complete lines only.

    A line without its newline yet stays buffered for the next read; only a final read (the
    job has exited) takes it as it is. A file that shrank was rewritten: it is read again from
    the start, and the caller's history replaces the steps it repeats."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""
        self._line_number = 0

    def read(self, final: bool = False) -> list[StepMetrics]:
        try:
            with self.path.open("rb") as stream:
                if os.fstat(stream.fileno()).st_size < self._offset:
                    self._offset, self._partial, self._line_number = 0, b"", 0
                stream.seek(self._offset)
                data = stream.read()
        except FileNotFoundError:
            data = b""
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        if final and self._partial.strip():
            lines.append(self._partial)
            self._partial = b""
        found = []
        for line in lines:
            self._line_number += 1
            if not line.strip():
                continue
            parsed = parse_metrics_line(line)
            if parsed is None:
                log.warning(
                    "skipping a malformed metrics line",
                    path=str(self.path),
                    line=self._line_number,
                    text=line[:200].decode(errors="replace"),
                )
            else:
                found.append(parsed)
        return found


@dataclass
class _Run:
    """The manager's mutable record of one run."""

    run_id: str
    out_dir: Path
    name: str
    state: RunState
    steps_total: int
    error: str = ""
    started: datetime | None = None
    finished: datetime | None = None

    def __post_init__(self) -> None:
        self.steps: list[StepMetrics] = []
        self.tail = MetricsTail(self.out_dir / METRICS_FILE)
        self.process: subprocess.Popen[bytes] | None = None
        self.stderr_offset = 0  # where this attempt's stderr starts in stderr.log
        self.stop_deadline: float | None = None  # monotonic time of the SIGKILL, once stop is asked
        self.killed = False
        self.changed = asyncio.Event()  # set (and replaced) whenever state or steps change

    @property
    def steps_done(self) -> int:
        return self.steps[-1].step if self.steps else 0

    def absorb(self, found: list[StepMetrics]) -> None:
        """Appends new steps; a step at or below the last replaces it and every later one (a
        resumed run re-doing steps after its checkpoint)."""
        for record in found:
            while self.steps and self.steps[-1].step >= record.step:
                self.steps.pop()
            self.steps.append(record)

    def notify(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def info(self) -> RunInfo:
        return RunInfo(
            run_id=self.run_id,
            name=self.name,
            state=self.state,
            steps_done=self.steps_done,
            steps_total=self.steps_total,
            latest=self.steps[-1] if self.steps else None,
            error=self.error,
            out_dir=self.out_dir,
            started=self.started,
            finished=self.finished,
        )

    def save(self) -> None:
        """Writes run.json atomically (a crash never leaves half a file)."""
        record = {
            "run_id": self.run_id,
            "name": self.name,
            "state": self.state.value,
            "steps_total": self.steps_total,
            "error": self.error,
            "started": self.started.isoformat() if self.started else None,
            "finished": self.finished.isoformat() if self.finished else None,
        }
        temporary = self.out_dir / f".{STATE_FILE}.tmp"
        temporary.write_text(json.dumps(record, indent=2) + "\n")
        os.replace(temporary, self.out_dir / STATE_FILE)

    @classmethod
    def load(cls, directory: Path) -> _Run:
        record = json.loads((directory / STATE_FILE).read_text())
        return cls(
            run_id=directory.name,
            out_dir=directory,
            name=str(record["name"]),
            state=RunState(record["state"]),
            steps_total=int(record["steps_total"]),
            error=str(record.get("error", "")),
            started=_timestamp(record.get("started")),
            finished=_timestamp(record.get("finished")),
        )


def _timestamp(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _now() -> datetime:
    return datetime.now(UTC)


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid``, read from /proc. torchrun starts its workers in sessions of
    their own, so the process group alone does not reach them."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended while we looked
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])  # after the command name, which may hold spaces
        children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def _send(send: Callable[[int, int], None], target: int, sig: signal.Signals) -> None:
    """Sends a signal to a process or group that may already be gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # gone, or its id now belongs to someone else
        send(target, sig)


def _kill_tree(pid: int) -> None:
    """SIGKILL for the process group of ``pid`` and every process below it."""
    below = _descendants(pid)
    _send(os.killpg, pid, signal.SIGKILL)
    for child in below:
        _send(os.kill, child, signal.SIGKILL)


def _claim(out_dir: Path) -> int | None:
    """A descriptor holding the run's lock, or None when a process of the run still holds it.
    The job inherits the descriptor, so the lock lives exactly as long as the job's process.
    (On NFS Linux emulates flock with POSIX locks, which a child does not inherit: there the
    guard never refuses.)"""
    return try_lock(out_dir / LOCK_FILE, 0o644)


def _exit_description(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


class RunManager:
    """Starts, tracks and stops training runs under one runs_dir. Its methods run on one
    asyncio event loop (the server's); each started run gets a supervising task there."""

    def __init__(self, settings: TrainerSettings) -> None:
        self._settings = settings
        self.runs_dir = settings.runs_dir.resolve()
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self._runs: dict[str, _Run] = {}
        self._supervisors: set[asyncio.Task[None]] = set()
        self._starting = asyncio.Lock()
        self._load()

    def _load(self) -> None:
        """Takes in the runs a previous server left in runs_dir. One that was pending or
        running then is no longer supervised by anyone: it is marked FAILED, to be resumed."""
        for directory in sorted(self.runs_dir.iterdir()):
            if not (directory / STATE_FILE).is_file():
                continue
            try:
                run = _Run.load(directory)
            except (OSError, ValueError, KeyError, TypeError) as error:
                log.warning("skipping a run whose run.json is unreadable", run_dir=str(directory), error=str(error))
                continue
            run.absorb(run.tail.read(final=True))
            if not run.state.ended:
                lock = _claim(directory)
                if lock is None:
                    run.error = (
                        f"the trainer service stopped while the run was running, and its process still runs "
                        f"unsupervised (it holds {LOCK_FILE}); stop it before resuming the run"
                    )
                else:
                    os.close(lock)
                    run.error = (
                        "the trainer service stopped while the run was running; resume it from its last checkpoint"
                    )
                run.state, run.finished = RunState.FAILED, _now()
                run.save()
            self._runs[run.run_id] = run
        self._set_active()

    def get(self, run_id: str) -> RunInfo:
        return self._run(run_id).info()

    def list_runs(self) -> list[RunInfo]:
        """Every run, most recently started first (never-started ones last)."""
        oldest = datetime.min.replace(tzinfo=UTC)
        runs = sorted(self._runs.values(), key=lambda r: (r.started or oldest, r.run_id), reverse=True)
        return [run.info() for run in runs]

    def _run(self, run_id: str) -> _Run:
        run = self._runs.get(run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r}")
        return run

    async def start(
        self, config_yaml: str, steps: int | None = None, run_id: str = "", resume_from: str = ""
    ) -> RunInfo:
        """Starts a run from YAML text, or resumes the run ``resume_from``; returns once its
        process is started (or failed to start: then the run is FAILED and says why)."""
        if steps is not None and steps < 1:
            raise InvalidArgument(f"steps must be at least 1, got {steps}")
        if run_id and not RUN_ID.fullmatch(run_id):
            raise InvalidArgument(f"run_id {run_id!r} must be 1 to 63 of a-z, 0-9 and '-'")
        async with self._starting:  # capacity and id checks hold until the process starts
            if resume_from:
                return await self._resume(config_yaml, steps, run_id, resume_from)
            if not config_yaml.strip():
                raise InvalidArgument("config_yaml is empty: give a run config, or resume_from")
            config = parse_run_config(config_yaml, where="config_yaml")
            if config.steps > _MAX_STEP:
                raise InvalidArgument(f"config_yaml: steps: at most {_MAX_STEP}, got {config.steps}")
            run_id = run_id or self._new_id(config.name)
            if run_id in self._runs:
                raise FailedPrecondition(f"run {run_id!r} exists: resume it with resume_from or choose another run_id")
            if (self.runs_dir / run_id).exists():
                raise FailedPrecondition(f"runs_dir holds a directory {run_id!r} that is no run; choose another run_id")
            self._check_capacity()
            out = self.runs_dir / run_id
            out.mkdir()
            (out / SUBMITTED_CONFIG).write_text(config_yaml)
            lock = _claim(out)
            assert lock is not None, "a new directory's lock is free"
            run = _Run(run_id, out, config.name, RunState.PENDING, steps or config.steps)
            self._runs[run_id] = run
            return self._launch(run, ["--config", str(out / SUBMITTED_CONFIG), "--out", str(out)], steps, lock)

    async def _resume(self, config_yaml: str, steps: int | None, run_id: str, resume_from: str) -> RunInfo:
        if config_yaml.strip():
            raise InvalidArgument("give config_yaml or resume_from, not both: a resumed run keeps its config")
        if run_id and run_id != resume_from:
            raise InvalidArgument(f"a resumed run keeps its id: run_id {run_id!r} is not resume_from {resume_from!r}")
        run = self._run(resume_from)
        if not run.state.ended:
            raise FailedPrecondition(f"run {resume_from!r} is {run.state.value}: it can be resumed once it has ended")
        if not await self.checkpoints(resume_from):
            raise FailedPrecondition(f"run {resume_from!r} has no complete checkpoint to resume from")
        self._check_capacity()
        lock = _claim(run.out_dir)
        if lock is None:
            raise FailedPrecondition(
                f"a process of run {resume_from!r} still runs unsupervised (it holds {LOCK_FILE}); stop it first"
            )
        run.steps_total = steps or run.steps_total
        run.error, run.finished = "", None
        return self._launch(run, ["--resume", str(run.out_dir)], steps, lock)

    def _new_id(self, name: str) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40] or "run"
        return f"{slug}-{_now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"

    def _check_capacity(self) -> None:
        active = sum(not run.state.ended for run in self._runs.values())
        limit = self._settings.max_concurrent_runs
        if active >= limit:
            raise ResourceExhausted(
                f"{active} of at most {limit} runs are pending or running; stop one or wait for it to end",
                NO_RETRY_MS,
            )

    def command(self, job_args: list[str]) -> list[str]:
        """The job's command line: plain python for one process per run, torchrun's launcher
        (python -m torch.distributed.run, the same interpreter) for more."""
        settings = self._settings
        python = str(settings.python or sys.executable)
        launcher = []
        if settings.nproc_per_node > 1:
            launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={settings.nproc_per_node}"]
        return [python, *launcher, *settings.train_args, *job_args]

    def _launch(self, run: _Run, job_args: list[str], steps: int | None, lock: int) -> RunInfo:
        """Starts the job, handing it ``lock`` (the run's locked run.lock) to hold."""
        run.state, run.started = RunState.PENDING, None
        run.stop_deadline, run.killed = None, False
        run.save()
        command = self.command([*job_args, *(["--steps", str(steps)] if steps else [])])
        # torchrun gives its workers 30 s after SIGTERM by default, too short to checkpoint.
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "TORCH_ELASTIC_SHUTDOWN_TIMEOUT": str(int(self._settings.stop_grace_seconds)),
        }
        try:
            with (run.out_dir / "stdout.log").open("ab") as stdout, (run.out_dir / "stderr.log").open("ab") as stderr:
                run.stderr_offset = stderr.tell()
                run.process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=stdout,
                    stderr=stderr,
                    env=env,
                    start_new_session=True,
                    pass_fds=(lock,),
                )
        except OSError as error:
            self._finish(run, RunState.FAILED, f"could not start the job ({command[0]}): {error}")
            return run.info()
        finally:
            os.close(lock)  # the job's copy holds the lock from here on
        run.state, run.started = RunState.RUNNING, _now()
        run.save()
        run.notify()
        metrics.RUNS_STARTED.inc()
        self._set_active()
        log.info("run started", run=run.run_id, pid=run.process.pid, command=command)
        task = asyncio.get_running_loop().create_task(self._supervise(run), name=f"run {run.run_id}")
        self._supervisors.add(task)
        task.add_done_callback(self._supervisors.discard)
        return run.info()

    def _set_active(self) -> None:
        metrics.RUNS_ACTIVE.set(sum(not run.state.ended for run in self._runs.values()))

    async def _supervise(self, run: _Run) -> None:
        """Follows one process until it exits: new metrics lines, the forced stop when its
        grace is over, then the final state."""
        process = run.process
        assert process is not None
        try:
            while process.poll() is None:
                self._ingest(run)
                if run.stop_deadline is not None and not run.killed and time.monotonic() >= run.stop_deadline:
                    log.warning(
                        "run did not stop in time; killing it",
                        run=run.run_id,
                        grace_seconds=self._settings.stop_grace_seconds,
                    )
                    _kill_tree(process.pid)
                    run.killed = True
                await asyncio.sleep(self._settings.poll_seconds)
        finally:
            if process.poll() is None:  # the supervisor itself was cancelled: leave nothing behind
                _kill_tree(process.pid)
                process.wait()
            _send(os.killpg, process.pid, signal.SIGKILL)  # whatever the job left behind in its group
            self._ingest(run, final=True)
            state, error = self._outcome(run, process.returncode)
            self._finish(run, state, error)

    def _ingest(self, run: _Run, final: bool = False) -> None:
        found = run.tail.read(final)
        if not found:
            return
        run.absorb(found)
        latest = run.steps[-1]
        metrics.record_step(run.run_id, {"step": latest.step, **latest.values})
        run.notify()

    def _outcome(self, run: _Run, code: int) -> tuple[RunState, str]:
        """The state a run ends in and its error text, from how its process exited."""
        if run.killed:
            grace = self._settings.stop_grace_seconds
            return RunState.STOPPED, f"did not exit within {grace:g} s of SIGTERM; killed"
        lines = self._stderr_lines(run) if code else []
        own = [line for line in lines if line.startswith("drkernel: ")]
        description = _exit_description(code)
        if run.stop_deadline is not None:
            # torchrun exits nonzero after passing SIGTERM on to workers that stopped cleanly, so
            # only the job's own error line, or a signal that ended it, tells of a failure.
            if own:
                return RunState.STOPPED, f"{description}: {own[-1]}"[:_MAX_ERROR_CHARS]
            return RunState.STOPPED, description if code < 0 else ""
        if code == 0:
            return (RunState.SUCCEEDED if run.steps_done >= run.steps_total else RunState.STOPPED), ""
        # The job's own account of the failure (under torchrun the launcher's report follows
        # it), else its last line.
        line = (own or lines or [""])[-1]
        return RunState.FAILED, f"{description}: {line}"[:_MAX_ERROR_CHARS] if line else description

    def _stderr_lines(self, run: _Run) -> list[str]:
        """The non-empty lines the job wrote on stderr in this attempt (its last 64 KiB)."""
        try:
            with (run.out_dir / "stderr.log").open("rb") as stream:
                size = os.fstat(stream.fileno()).st_size
                stream.seek(max(run.stderr_offset, size - _ERROR_TAIL_BYTES))
                text = stream.read().decode(errors="replace")
        except OSError:
            return []
        return [line.strip() for line in text.splitlines() if line.strip()]

    def _finish(self, run: _Run, state: RunState, error: str) -> None:
        run.state, run.error, run.finished = state, error, _now()
        run.process = None
        run.save()
        run.notify()
        metrics.RUNS_FINISHED.labels(state.value).inc()
        self._set_active()
        log.info("run ended", run=run.run_id, state=state.value, steps_done=run.steps_done, error=error)

    async def watch(self, run_id: str, from_step: int = 0) -> AsyncIterator[StepMetrics]:
        """The run's steps from ``from_step`` on: those recorded, then each new one, until the
        run has ended and its last step was given."""
        run = self._run(run_id)
        sent = from_step - 1
        while True:
            changed = run.changed
            ended = run.state.ended
            for record in [r for r in run.steps if r.step > sent]:
                sent = record.step
                yield record
            if ended:
                return
            await changed.wait()

    async def stop(self, run_id: str) -> RunInfo:
        """SIGTERM to the job (torchrun passes it to its workers); the supervisor kills it after
        stop_grace_seconds. Returns once the run has ended; an ended run is left as it is."""
        run = self._run(run_id)
        if run.state.ended:
            return run.info()
        if run.stop_deadline is None:
            run.stop_deadline = time.monotonic() + self._settings.stop_grace_seconds
            if run.process is not None:
                log.info("stopping run", run=run_id, pid=run.process.pid)
                _send(os.kill, run.process.pid, signal.SIGTERM)
        while not run.state.ended:
            await run.changed.wait()
        return run.info()

    async def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """The run's complete checkpoints, oldest first (the job writes only complete ones)."""
        run = self._run(run_id)
        return await asyncio.to_thread(_scan_checkpoints, run.out_dir / "checkpoints")

    async def close(self) -> None:
        """Stops every run (each gets its grace to checkpoint) and waits for them to end."""
        active = [run.run_id for run in self._runs.values() if not run.state.ended]
        await asyncio.gather(*(self.stop(run_id) for run_id in active))
        await asyncio.gather(*self._supervisors)


def _scan_checkpoints(root: Path) -> list[Checkpoint]:
    found = []
    try:
        entries = list(root.iterdir())
    except FileNotFoundError:
        return []
    for entry in entries:
        match = CHECKPOINT_DIR.fullmatch(entry.name)
        if match is None or not entry.is_dir():
            continue
        try:  # the job prunes old checkpoints while we look
            created = datetime.fromtimestamp(entry.stat().st_mtime, UTC)
            size = sum(
                os.lstat(os.path.join(directory, name)).st_size
                for directory, _, names in os.walk(entry)
                for name in names
            )
        except FileNotFoundError:
            continue
        if not entry.is_dir():  # pruned while its files were counted
            continue
        hf = entry / "hf"
        found.append(Checkpoint(int(match.group(1)), entry, hf if hf.is_dir() else None, size, created))
    return sorted(found, key=lambda checkpoint: checkpoint.step)
