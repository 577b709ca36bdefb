"""Exclusive advisory locks that die with their holder.

``flock`` on a file descriptor: the kernel drops the lock when every descriptor sharing it is
closed, so a crashed holder never leaves a stale lock behind (used for the trainer's run
directories and the sandbox's uids).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


def try_lock(path: Path, mode: int = 0o600) -> int | None:
    """A descriptor holding an exclusive lock on ``path`` (created if missing), or None when
    another holder has it. Close the descriptor to release the lock."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, mode)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
