"""Pushing the learner's new weights to the policy service after each step.

Two ways, one switch (``sync.mode``):
- ``shared_path``: safetensors written to ``OUT/weights/v<version>/`` on a path both read (a
  Kubernetes volume, or the local disk), then ``UpdateWeights`` names the directory. The
  robust fallback prime-rl's CI uses; works on CPU.
- ``grpc_stream``: the tensors travel inside the ``UpdateWeights`` stream, when no volume is
  shared.
The served ``weights_version`` is the learner's step, so every completion says which step's
weights wrote it. The NCCL fast path for vLLM is described in the trainer README.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import save_file

from services.policy.client import PolicyClient
from services.trainer.run_config import SyncSettings


@dataclass(frozen=True)
class SyncResult:
    version: int
    seconds: float
    bytes: int
    tensors: int


def write_weights(tensors: Mapping[str, torch.Tensor], directory: Path) -> int:
    """Writes ``model.safetensors`` atomically (a reader never sees half a file); returns bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    partial = directory / "model.safetensors.partial"
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(partial))
    partial.rename(directory / "model.safetensors")
    return (directory / "model.safetensors").stat().st_size


def _prune(weights_dir: Path, keep: int) -> None:
    versions = sorted((p for p in weights_dir.glob("v*") if p.name[1:].isdigit()), key=lambda p: int(p.name[1:]))
    for old in versions[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


async def push_weights(
    policy: PolicyClient,
    tensors: Mapping[str, torch.Tensor],
    version: int,
    settings: SyncSettings,
    weights_dir: Path,
) -> SyncResult:
    """Makes the policy serve ``tensors`` as ``version``; returns how long it took."""
    started = time.perf_counter()
    size = sum(t.numel() * t.element_size() for t in tensors.values())
    if settings.mode == "shared_path":
        directory = weights_dir / f"v{version}"
        size = write_weights(tensors, directory)
        await policy.update_from_directory(directory.resolve(), version)
        _prune(weights_dir, settings.keep_versions)
    else:
        await policy.update_from_tensors(tensors, version)
    return SyncResult(version, time.perf_counter() - started, size, len(tensors))
