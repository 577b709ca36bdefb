"""The compiled-kernel cache: what Triton compiled for a candidate source, kept for the next
evaluation of the same source, within a size cap, least recently used first out.

A candidate's ``$TRITON_CACHE_DIR`` is untrusted: only regular files in Triton's own layout
(``<key>/<file>``) with the suffixes Triton writes are kept, links are never followed, and
sizes and counts are capped, so that junk written there is dropped rather than stored for
ever. Each entry is one file, packed on save into a temporary file and renamed into place, so
that the worker slots of a server (threads) and other servers sharing the directory only ever
see whole entries; an entry may vanish at any time (evicted by another), which a restore
takes as a miss. A file's modification time records its last use.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import stat
import struct
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from drkernel.logs import get_logger

log = get_logger(__name__)

# What triton/compiler/compiler.py writes per kernel (the source IR, one file per stage of the
# NVIDIA and AMD backends, the metadata and its group file, autotuning results in .json) and
# triton/runtime/build.py for the launcher (.so).
TRITON_SUFFIXES = frozenset(
    {"json", "source", "ttir", "ttgir", "glir", "llir", "ptx", "cubin", "amdgcn", "hsaco", "so"}
)
MAX_ENTRY_FILES = 4096
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,254}")
_RECORD = struct.Struct("!HQ")  # name length, data length
_STALE_TEMP_SECONDS = 3600.0
_EVICTING = threading.Lock()  # one eviction at a time among the worker slots of this process
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@functools.cache
def triton_installation_key() -> str:
    """Triton's hash of its own installation (its compiler's sources and libtriton), a part of
    every compiled kernel's cache key. Hashed once here and handed to each candidate process
    (they run the same Triton), where it took 0.65 s of CPU per evaluation on a 2-core machine."""
    from triton.runtime.cache import triton_key

    return str(triton_key())


def _kept(name: str) -> bool:
    return _NAME.fullmatch(name) is not None and name.rsplit(".", 1)[-1] in TRITON_SUFFIXES


class KernelCache:
    """Entries keyed by candidate source under ``root``; at most ``max_bytes`` in all and
    ``max_entry_bytes`` per entry (0 turns the cache off)."""

    def __init__(self, root: Path, max_bytes: int, max_entry_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.max_entry_bytes = min(max_entry_bytes, max_bytes)
        self._temp = root / "tmp"
        self._temp.mkdir(parents=True, exist_ok=True)
        self._remove_stale_temps()
        self.evict()  # the cap may have been lowered since the entries were written

    def _path(self, source: str) -> Path:
        return self.root / hashlib.sha256(source.encode()).hexdigest()[:32]

    # Restore --------------------------------------------------------------------------

    def restore(self, source: str, target: Path, owner: int | None) -> bool:
        """Unpacks the entry of ``source`` into ``target`` (a fresh Triton cache directory,
        given to ``owner``) and marks it used; False when there is none or it cannot be used
        (a corrupt one is removed): a miss costs only a compilation."""
        path = self._path(source)
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed by the `with handle` below, after the miss is told apart
        except FileNotFoundError:
            return False
        try:
            with handle:
                os.utime(handle.fileno())
                for name, data in _records(handle, self.max_entry_bytes):
                    key, file_name = name.split("/")
                    directory = target / key
                    directory.mkdir(parents=True, exist_ok=True)
                    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                    with open(os.open(directory / file_name, flags, 0o644), "wb") as file:
                        file.write(data)
        except ValueError as error:
            log.warning("corrupt compiled-kernel cache entry removed", entry=path.name, error=str(error))
            path.unlink(missing_ok=True)
            return False
        except OSError as error:
            log.warning("compiled-kernel cache entry not restored", entry=path.name, error=str(error))
            return False
        if owner is not None:
            for directory, names, files in os.walk(target):
                os.chown(directory, owner, owner)
                for name in names + files:
                    os.chown(os.path.join(directory, name), owner, owner, follow_symlinks=False)
        return True

    # Save -----------------------------------------------------------------------------

    def save(self, source: str, produced: Path) -> bool:
        """Packs what Triton left in ``produced`` (untrusted) as the entry of ``source``, unless
        there is one already, it holds nothing kept or it exceeds the entry cap; then evicts
        least recently used entries down to the total cap. True when an entry was written;
        a failure (a full disk, say) is logged, never raised: the cache is an optimisation."""
        path = self._path(source)
        if self.max_entry_bytes <= 0 or path.exists():
            return False
        try:
            files = _triton_files(produced, self.max_entry_bytes)
            if not files:
                return False
            self._temp.mkdir(parents=True, exist_ok=True)  # a cleaner may have emptied the work directory
            descriptor, temp_name = tempfile.mkstemp(dir=self._temp)
            try:
                with open(descriptor, "wb") as out:
                    for name, data in files:
                        encoded = name.encode()
                        out.write(_RECORD.pack(len(encoded), len(data)))
                        out.write(encoded)
                        out.write(data)
                os.replace(temp_name, path)
            except BaseException:
                os.unlink(temp_name)
                raise
            self.evict()
        except OSError as error:
            log.warning("compiled-kernel cache not saved", entry=path.name, error=str(error))
            return False
        return True

    def evict(self) -> None:
        """Removes least recently used entries until the rest fit the total cap."""
        with _EVICTING:
            entries = list(self._entries())
            total = sum(size for _, size, _ in entries)
            for _, size, path in sorted(entries):
                if total <= self.max_bytes:
                    break
                path.unlink(missing_ok=True)  # another server sharing the directory may have evicted it
                total -= size

    def _entries(self) -> Iterator[tuple[int, int, Path]]:
        """(last use in ns, size, path) of every entry present now."""
        with os.scandir(self.root) as found:
            for entry in found:
                try:
                    status = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if stat.S_ISREG(status.st_mode):
                    yield status.st_mtime_ns, status.st_size, Path(entry.path)

    def _remove_stale_temps(self) -> None:
        """Temporary files of saves cut short by a crash (a live save takes seconds, not hours)."""
        cutoff = time.time() - _STALE_TEMP_SECONDS
        with os.scandir(self._temp) as found:
            for entry in found:
                try:
                    if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                        os.unlink(entry.path)
                except FileNotFoundError:
                    pass


def _records(handle: BinaryIO, max_bytes: int) -> Iterator[tuple[str, bytes]]:
    """The (``key/file``, contents) records of an entry; the names are checked again."""
    total = 0
    while head := handle.read(_RECORD.size):
        if len(head) != _RECORD.size:
            raise ValueError("truncated kernel cache entry")
        name_size, data_size = _RECORD.unpack(head)
        total += name_size + data_size
        if total > max_bytes:
            raise ValueError("kernel cache entry over its cap")
        name = handle.read(name_size).decode()
        key, _, file_name = name.partition("/")
        if _NAME.fullmatch(key) is None or not _kept(file_name):
            raise ValueError(f"unexpected name in a kernel cache entry: {name!r}")
        data = handle.read(data_size)
        if len(data) != data_size:
            raise ValueError("truncated kernel cache entry")
        yield name, data


def _triton_files(produced: Path, max_bytes: int) -> list[tuple[str, bytes]]:
    """(``key/file``, contents) of the regular files in Triton's layout under ``produced``:
    no links are followed (each directory is opened relative to its parent's descriptor),
    other names and file types are skipped; empty when the whole exceeds ``max_bytes`` or
    ``MAX_ENTRY_FILES``, since a cache that large is not a kernel's."""
    try:
        top = os.open(produced, _DIRECTORY_FLAGS)
    except OSError:
        return []
    files: list[tuple[str, bytes]] = []
    total = 0
    try:
        for key in os.listdir(top):
            if _NAME.fullmatch(key) is None:
                continue
            try:
                key_fd = os.open(key, _DIRECTORY_FLAGS, dir_fd=top)
            except OSError:
                continue  # a link, a file, or gone
            try:
                for name in filter(_kept, os.listdir(key_fd)):
                    try:
                        handle = os.open(name, _READ_FLAGS, dir_fd=key_fd)
                    except OSError:
                        continue
                    with open(handle, "rb") as file:
                        status = os.fstat(file.fileno())
                        if not stat.S_ISREG(status.st_mode):
                            continue
                        total += status.st_size
                        if total > max_bytes or len(files) >= MAX_ENTRY_FILES:
                            log.warning(
                                "compiled-kernel cache not saved: over its cap", bytes=total, files=len(files) + 1
                            )
                            return []
                        data = file.read(status.st_size + 1)
                    if len(data) != status.st_size:
                        return []  # changed while read: nothing to keep
                    files.append((f"{key}/{name}", data))
            finally:
                os.close(key_fd)
    finally:
        os.close(top)
    return files
