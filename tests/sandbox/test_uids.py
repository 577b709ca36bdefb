"""Sandbox uids are exclusive per host: two servers never drop candidates to the same uid, so one
server's processes never count against another's RLIMIT_NPROC."""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from drkernel.errors import FailedPrecondition
from services.sandbox.server.isolation import Launcher
from services.sandbox.server.uids import claim_uids, processes_of
from services.sandbox.server.worker import Worker
from services.sandbox.settings import IsolationSettings, SandboxSettings


def test_claims_are_disjoint_and_freed_on_release(tmp_path: Path) -> None:
    first = claim_uids(tmp_path, 70000, 8, needed=2)
    second = claim_uids(tmp_path, 70000, 8, needed=2)
    assert first.uids == (70000, 70001)
    assert second.uids == (70002, 70003)
    first.release()
    assert claim_uids(tmp_path, 70000, 8, needed=2).uids == (70000, 70001)


def test_too_few_free_uids_is_a_clear_error_and_holds_nothing(tmp_path: Path) -> None:
    held = claim_uids(tmp_path, 70000, 3, needed=2)
    with pytest.raises(FailedPrecondition, match="no 2 free sandbox uids in \\[70000, 70003\\)"):
        claim_uids(tmp_path, 70000, 3, needed=2)
    assert claim_uids(tmp_path, 70000, 3, needed=1).uids == (70002,)  # the failed claim let go of 70002
    held.release()


def test_another_process_claim_is_respected_until_it_dies(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys, time
            from pathlib import Path
            from services.sandbox.server.uids import claim_uids, processes_of
            claim = claim_uids(Path({str(tmp_path)!r}), 70000, 8, needed=2)
            print(*claim.uids, flush=True)
            time.sleep(60)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().split() == ["70000", "70001"]
        mine = claim_uids(tmp_path, 70000, 8, needed=2)
        assert mine.uids == (70002, 70003)
    finally:
        holder.kill()
        holder.wait()
    assert claim_uids(tmp_path, 70000, 8, needed=2).uids == (70000, 70001)  # the kernel dropped its locks


def test_workers_of_two_servers_get_different_uids(tmp_path: Path) -> None:
    settings = SandboxSettings(
        work_dir=tmp_path / "work", isolation=IsolationSettings(uid_lock_dir=tmp_path / "uids", uid_base=70000)
    )
    launcher = Launcher(settings.isolation)
    one = Worker(0, "cpu", settings, launcher, tmp_path / "run-1")
    two = Worker(0, "cpu", settings, launcher, tmp_path / "run-2")  # the same slot of another server
    try:
        held = [*one._uids.uids, *two._uids.uids]
        assert len(set(held)) == len(held) == 2 * (settings.spare_candidates("cpu") + 3)
        assert one._judge_uid not in one._free_uids
    finally:
        one._uids.release()
        two._uids.release()


@pytest.mark.slow
def test_a_killed_candidates_uid_is_not_the_next_candidates(tmp_path: Path) -> None:
    """RLIMIT_NPROC counts a uid's processes host-wide: a candidate that filled it (a fork bomb
    still dying) must not hand its budget to the next candidate started, which then failed to
    start threads with EAGAIN (an honest kernel's RUNTIME_ERROR)."""
    settings = SandboxSettings(
        work_dir=tmp_path / "work",
        warm_candidates=1,
        isolation=IsolationSettings(uid_lock_dir=tmp_path / "uids", uid_base=70000),
    )
    worker = Worker(0, "cpu", settings, Launcher(settings.isolation), tmp_path / "run")

    async def uids_in_turn() -> list[int]:
        worker._prepare_spares()
        used = []
        try:
            for _ in range(4):
                candidate = await worker._take_candidate()  # starts the next warm one at once
                used.append(candidate.uid)
                await worker._kill_candidate(candidate)
        finally:
            await worker.close()
        return used

    used = asyncio.run(uids_in_turn())
    assert all(a != b for a, b in itertools.pairwise(used))
    assert len(set(used)) == 3  # warm_candidates + 2, in turn


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="only root starts processes as another uid")
def test_what_is_left_of_a_uid_is_killed_before_its_next_use(tmp_path: Path) -> None:
    """A killed sandbox's processes outlive it for a moment (a fork bomb's hundreds on a loaded
    host): the worker kills what is left of a uid before it starts a process as that uid."""
    settings = SandboxSettings(
        work_dir=tmp_path / "work",
        warm_candidates=1,
        isolation=IsolationSettings(uid_lock_dir=tmp_path / "uids", uid_base=70300),
    )
    worker = Worker(0, "cpu", settings, Launcher(settings.isolation), tmp_path / "run")
    uid = worker._free_uids[1]  # the second candidate's
    drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    left = [subprocess.Popen([*drop, "sleep", "60"]) for _ in range(3)]
    deadline = time.monotonic() + 10
    while len(processes_of(uid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(processes_of(uid)) == sorted(p.pid for p in left)

    async def take_one() -> None:
        worker._prepare_spares()
        try:
            await worker._kill_candidate(await worker._take_candidate())  # starts the second at once
        finally:
            await worker.close()

    asyncio.run(take_one())
    for process in left:
        process.wait(timeout=5)  # killed (and reaped) long before their 60 s
