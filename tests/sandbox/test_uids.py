"""Sandbox uids are exclusive per host: two servers never drop candidates to the same uid, so one
server's processes never count against another's RLIMIT_NPROC."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from drkernel.errors import FailedPrecondition
from services.sandbox.server.isolation import Launcher
from services.sandbox.server.uids import claim_uids
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
            from services.sandbox.server.uids import claim_uids
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
        uids = {one._candidate_uid, one._judge_uid, two._candidate_uid, two._judge_uid}
        assert len(uids) == 4
    finally:
        one._uids.release()
        two._uids.release()
