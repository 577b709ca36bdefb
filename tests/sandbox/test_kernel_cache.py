"""The compiled-kernel cache (services/sandbox/server/kernel_cache.py) on hand-made Triton cache
directories: what is kept, the caps, least-recently-used eviction and concurrent use."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from services.sandbox.server.kernel_cache import KernelCache

KEY = "CKQ2NVLW5D7QFZ2XHQKQXKQ4WJ6YJ3BGQW2O5XQ2JZ3ZQ2H5ZQ"
ENTRY = 1000  # bytes of kernel files per hand-made entry


def triton_dir(root: Path, size: int = ENTRY, key: str = KEY) -> Path:
    """A Triton cache directory as a compilation leaves it: one key, its kernel's files."""
    directory = root / key
    directory.mkdir(parents=True)
    (directory / "relu_kernel.ttir").write_bytes(b"i" * (size - 600))
    (directory / "relu_kernel.ptx").write_bytes(b"p" * 300)
    (directory / "relu_kernel.json").write_bytes(b"j" * 200)
    (directory / "__grp__relu_kernel.json").write_bytes(b"g" * 100)
    return root


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def entry_bytes(cache: KernelCache) -> int:
    return sum(p.stat().st_size for p in cache.root.iterdir() if p.is_file())


def age(cache: KernelCache, source: str, seconds_ago: float) -> None:
    """Backdates an entry's last use (file times are coarser than the steps of a test)."""
    stamp = time.time() - seconds_ago
    os.utime(cache._path(source), (stamp, stamp))


def test_saved_kernels_come_back_for_the_same_source_only(tmp_path):
    cache = KernelCache(tmp_path / "cache", 1 << 20, 1 << 16)
    produced = triton_dir(tmp_path / "produced")
    assert cache.save("source a", produced)
    assert not cache.save("source a", produced)  # already there
    assert cache.restore("source a", tmp_path / "a", owner=None)
    assert files(tmp_path / "a") == files(produced)
    assert not cache.restore("source b", tmp_path / "b", owner=None)
    assert not (tmp_path / "b").exists()


def test_junk_links_and_other_layouts_are_not_kept(tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text("host secret")
    produced = triton_dir(tmp_path / "produced")
    key = produced / KEY
    (key / "junk.bin").write_bytes(b"x" * 5000)
    (key / "notes.txt").write_text("junk")
    (key / "leak.json").symlink_to(secret)
    os.mkfifo(key / "blocking.json")
    (key / "nested").mkdir()
    (key / "nested" / "deep.ptx").write_text("wrong layout")
    (produced / "top.json").write_text("wrong layout")
    (produced / "linked_key").symlink_to(tmp_path)
    cache = KernelCache(tmp_path / "cache", 1 << 20, 1 << 16)
    assert cache.save("source", produced)
    assert cache.restore("source", tmp_path / "restored", owner=None)
    assert sorted(files(tmp_path / "restored")) == sorted(
        f"{KEY}/{name}"
        for name in ("relu_kernel.ttir", "relu_kernel.ptx", "relu_kernel.json", "__grp__relu_kernel.json")
    )
    assert b"host secret" not in b"".join(p.read_bytes() for p in cache.root.rglob("*") if p.is_file())


def test_a_linked_cache_directory_is_not_followed(tmp_path):
    real = triton_dir(tmp_path / "elsewhere")
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / ".triton").symlink_to(real)
    cache = KernelCache(tmp_path / "cache", 1 << 20, 1 << 16)
    assert not cache.save("source", tmp_path / "scratch" / ".triton")


def test_an_entry_over_its_cap_is_not_kept(tmp_path):
    cache = KernelCache(tmp_path / "cache", 1 << 20, ENTRY - 1)
    assert not cache.save("source", triton_dir(tmp_path / "produced"))
    assert entry_bytes(cache) == 0
    assert not cache.restore("source", tmp_path / "restored", owner=None)


def test_least_recently_used_entries_go_first_and_the_cap_holds(tmp_path):
    probe = KernelCache(tmp_path / "probe", 1 << 20, 1 << 16)
    probe.save("probe", triton_dir(tmp_path / "probe-dir"))
    cache = KernelCache(tmp_path / "cache", int(2.5 * entry_bytes(probe)), 1 << 16)  # room for two
    for name in ("a", "b"):
        assert cache.save(name, triton_dir(tmp_path / name))
    age(cache, "a", 300)
    age(cache, "b", 200)
    assert cache.restore("a", tmp_path / "a-restored", owner=None)  # a is now the most recent
    assert cache.save("c", triton_dir(tmp_path / "c"))
    assert entry_bytes(cache) <= cache.max_bytes
    assert not cache.restore("b", tmp_path / "b-restored", owner=None)  # evicted
    assert not (tmp_path / "b-restored").exists()
    for name in ("a", "c"):
        assert cache.restore(name, tmp_path / f"{name}-again", owner=None)
    # an evicted source compiles again and is saved again, evicting the oldest
    age(cache, "a", 100)
    assert cache.save("b", triton_dir(tmp_path / "b-new"))
    assert cache.restore("b", tmp_path / "b-after", owner=None)
    assert files(tmp_path / "b-after") == files(tmp_path / "b-new")
    assert not cache.restore("a", tmp_path / "a-gone", owner=None)
    assert entry_bytes(cache) <= cache.max_bytes


def test_a_lowered_cap_applies_at_start(tmp_path):
    cache = KernelCache(tmp_path / "cache", 1 << 20, 1 << 16)
    for index in range(5):
        cache.save(f"source {index}", triton_dir(tmp_path / str(index)))
    assert entry_bytes(KernelCache(tmp_path / "cache", 2 * ENTRY, 1 << 16)) <= 2 * ENTRY
    assert entry_bytes(KernelCache(tmp_path / "cache", 0, 1 << 16)) == 0


def test_a_corrupt_entry_is_a_miss_and_removed(tmp_path):
    cache = KernelCache(tmp_path / "cache", 1 << 20, 1 << 16)
    cache.save("source", triton_dir(tmp_path / "produced"))
    path = cache._path("source")
    path.write_bytes(path.read_bytes()[:-10])
    assert not cache.restore("source", tmp_path / "restored", owner=None)
    assert not path.exists()


def test_concurrent_saves_restores_and_evictions_keep_whole_entries_within_the_cap(tmp_path):
    cache = KernelCache(tmp_path / "cache", 6 * ENTRY, 1 << 16)
    produced = triton_dir(tmp_path / "produced")
    expected = files(produced)

    def work(index: int) -> None:
        source = f"source {index % 12}"
        cache.save(source, produced)
        target = tmp_path / "restored" / str(index)
        if cache.restore(source, target, owner=None):
            assert files(target) == expected  # whole, or a miss; never a part

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(200)))
    assert entry_bytes(cache) <= cache.max_bytes
    assert list((tmp_path / "cache" / "tmp").iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files away needs root")
def test_restored_files_belong_to_the_candidate(tmp_path):
    cache = KernelCache(tmp_path / "cache", 1 << 20, 1 << 16)
    cache.save("source", triton_dir(tmp_path / "produced"))
    assert cache.restore("source", tmp_path / "restored", owner=61999)
    assert {p.stat().st_uid for p in [tmp_path / "restored", *(tmp_path / "restored").rglob("*")]} == {61999}


class _Hashed:
    """Stands in for Triton's source, backend and options objects: only their hash is read."""

    def __init__(self, value: str) -> None:
        self.value = value

    def hash(self) -> str:
        return self.value


def test_candidates_key_compiled_kernels_as_triton_would_without_hashing_triton_again(monkeypatch):
    import triton.runtime.cache as cache

    from services.sandbox.candidate.harness import use_triton_key
    from services.sandbox.server.kernel_cache import triton_installation_key

    monkeypatch.setattr(cache, "triton_key", cache.triton_key)  # put back after the test
    parts = (_Hashed("source"), _Hashed("backend"), _Hashed("options"))
    own = cache.get_cache_key(*parts, env_vars={})
    use_triton_key(triton_installation_key())
    assert cache.get_cache_key(*parts, env_vars={}) == own  # kernels saved before stay valid
    use_triton_key("another Triton installation")
    assert cache.get_cache_key(*parts, env_vars={}) != own  # the key given is the one used
