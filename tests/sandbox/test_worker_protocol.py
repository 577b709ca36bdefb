"""The judge may have the candidate's sandbox ended in the middle of a job (to time the
reference with nothing of the candidate left on the device): the worker kills it, with all it
started, before it answers."""

from __future__ import annotations

import asyncio
import os
import select
import socket
import threading
from pathlib import Path

import torch

from services.sandbox.judge.process import Judge
from services.sandbox.server.isolation import Launcher
from services.sandbox.server.uids import processes_of
from services.sandbox.server.worker import Worker, _Process
from services.sandbox.settings import IsolationSettings, SandboxSettings
from services.sandbox.wire.framing import send
from services.sandbox.wire.server_judge import JobDone


def _cpu_worker(tmp_path: Path, warm_candidates: int, uid_base: int) -> Worker:
    """A CPU worker of its own under ``tmp_path``, its sandbox uids from ``uid_base``."""
    settings = SandboxSettings(
        work_dir=tmp_path / "work",
        warm_candidates=warm_candidates,
        isolation=IsolationSettings(uid_lock_dir=tmp_path / "uids", uid_base=uid_base),
    )
    return Worker(0, "cpu", settings, Launcher(settings.isolation), tmp_path / "run")


def test_the_candidate_is_gone_when_the_judge_is_told_it_ended(tmp_path: Path) -> None:
    worker = _cpu_worker(tmp_path, warm_candidates=1, uid_base=70600)
    judge_side, worker_side = socket.socketpair()
    judge = Judge(worker.settings, torch.device("cpu"), tmp_path, judge_side)
    seen: list[tuple[int | None, list[int]]] = []

    async def job() -> tuple[JobDone, object]:
        worker._prepare_spares()
        candidate = await worker._take_candidate()
        assert candidate.process.returncode is None

        def judging() -> None:  # the judge's side: end the candidate, look, finish the job
            judge._end_sandbox()
            seen.append((candidate.process.returncode, processes_of(candidate.uid) if os.geteuid() == 0 else []))
            send(judge_side, JobDone(not_judged="finished"))

        thread = threading.Thread(target=judging)
        thread.start()
        fake_judge_process = _Process(candidate.process, worker_side, tmp_path, candidate.output, 0)
        try:
            return await worker._judge_reply(fake_judge_process, candidate, asyncio.Event())
        finally:
            thread.join()
            await worker._kill_candidate(candidate)
            await worker.close()

    done, judgement = asyncio.run(job())
    judge_side.close()
    worker_side.close()
    (returncode, left), *_ = seen
    assert returncode is not None  # reaped before the judge was answered
    assert left == []  # and every process of its sandbox gone (each candidate has its own uid as root)
    assert done.not_judged == "finished" and judgement is None


def test_a_started_worker_has_a_candidate_that_finished_starting(tmp_path: Path) -> None:
    # A server says SERVING only once its first evaluation pays no start-up: the warm
    # candidate's Ready is already waiting (and left for the judge to read).
    worker = _cpu_worker(tmp_path, warm_candidates=1, uid_base=70620)

    async def start() -> bool:
        await worker.start()
        try:
            candidate = await worker._take_candidate()
            readable, _, _ = select.select([candidate.sock], [], [], 0)
            await worker._kill_candidate(candidate)
            return bool(readable)
        finally:
            await worker.close()

    assert asyncio.run(start())


def test_a_worker_keeping_no_spares_starts_one_candidate_per_evaluation_and_nothing_more(tmp_path: Path) -> None:
    # A one-off local evaluation: a spare would only take the cores from the evaluation.
    worker = _cpu_worker(tmp_path, warm_candidates=0, uid_base=70640)

    async def start() -> tuple[int, int, bool]:
        await worker.start()
        try:
            before = len(worker._spares)
            candidate = await worker._take_candidate()
            alive = candidate.process.returncode is None
            after = len(worker._spares)
            await worker._kill_candidate(candidate)
            return before, after, alive
        finally:
            await worker.close()

    assert asyncio.run(start()) == (0, 0, True)


def test_gpu_workers_keep_more_spares_than_cpu_workers_unless_told_how_many(tmp_path: Path) -> None:
    """A GPU candidate takes about 12 s to start (CUPTI, the CUDA context) against 4-5 s for a
    full-size evaluation: back to back, three spares were not enough to hide it."""
    unset = SandboxSettings(work_dir=tmp_path)
    assert (unset.spare_candidates("cpu"), unset.spare_candidates("cuda")) == (3, 5)
    two = SandboxSettings(work_dir=tmp_path, warm_candidates=2)
    assert (two.spare_candidates("cpu"), two.spare_candidates("cuda")) == (2, 2)
