"""Sandbox uids that no other sandbox server on this host uses at the same time.

RLIMIT_NPROC counts every process and thread of a uid across the whole machine. Two sandbox
servers whose workers dropped to the same uids (two test sessions, two pods on one node, which
share the host's user namespace) would share one process budget, so one server's candidates
could make another's fail to start — an honest kernel charged for a neighbour's load. Each
worker therefore claims its uids by holding an exclusive ``flock`` on a file named after each
uid in a host-wide directory. The kernel drops the lock when the holder dies, so a crashed
server never leaks a claim and no cleanup is needed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from drkernel.errors import FailedPrecondition
from drkernel.locks import try_lock


class UidClaim:
    """Uids held for one worker until :meth:`release` (or the process's death)."""

    def __init__(self, uids: tuple[int, ...], locks: list[int]) -> None:
        self.uids = uids
        self._locks = locks

    def release(self) -> None:
        for fd in self._locks:
            os.close(fd)
        self._locks = []


def claim_uids(lock_dir: Path, first: int, count: int, needed: int) -> UidClaim:
    """The lowest ``needed`` free uids in ``[first, first + count)``, locked under ``lock_dir``."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    uids: list[int] = []
    locks: list[int] = []
    for uid in range(first, first + count):
        fd = try_lock(lock_dir / f"uid-{uid}.lock")
        if fd is None:
            continue
        uids.append(uid)
        locks.append(fd)
        if len(uids) == needed:
            return UidClaim(tuple(uids), locks)
    UidClaim(tuple(uids), locks).release()
    raise FailedPrecondition(
        f"no {needed} free sandbox uids in [{first}, {first + count}) (claims in {lock_dir}): "
        "raise sandbox.isolation.uid_count or stop other sandbox servers on this host"
    )


def processes_of(uid: int) -> list[int]:
    """Pids of the processes whose real uid is ``uid`` (the uid RLIMIT_NPROC charges)."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"{entry.path}/status") as status:
                real = next(line.split()[1] for line in status if line.startswith("Uid:"))
        except (OSError, StopIteration):  # gone meanwhile
            continue
        if int(real) == uid:
            pids.append(int(entry.name))
    return pids


def clear_uid(uid: int, timeout_seconds: float) -> list[int]:
    """Kills whatever still runs as ``uid`` and waits until it is gone; returns the pids left
    at the deadline. A sandbox's processes outlive its kill for a moment (the kernel tears a
    PID namespace down asynchronously; a fork bomb's hundreds take a while on a loaded host),
    and a process started as the uid meanwhile would find its process budget spent. A server
    without ``CAP_KILL`` (deploy/k8s/components/sandbox-root-isolation) only waits for them."""
    deadline = time.monotonic() + timeout_seconds
    while pids := processes_of(uid):
        if time.monotonic() >= deadline:
            return pids
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):  # no CAP_KILL: they die anyway
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):  # a zombie of ours (we may be PID 1) counts too
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    return []
