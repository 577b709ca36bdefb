"""Checkpoints a killed run resumes from: ``ROOT/step_N/`` per saved step.

A checkpoint holds a ``torch.distributed.checkpoint`` (DCP) of the model and optimizer under
``dcp/`` (sharded: each rank writes its own shards, and DCP can load them into another world
size), the scheduler and the caller's ``extra`` (step, data cursor, sampler state) as JSON,
and one RNG file per rank.

It is written into a hidden ``.step_N.partial`` directory and renamed to ``step_N`` by rank 0
only after every rank has finished writing, so a ``step_N`` directory is always complete:
a SIGKILL mid-save leaves only a partial directory, which ``latest_checkpoint`` ignores and
``prune_checkpoints`` deletes. ``latest_checkpoint`` is the highest complete step (no pointer
file that could disagree with the directories).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_state_dict,
    set_state_dict,
)
from torch.optim.lr_scheduler import LRScheduler

from services.trainer import distributed

# Frozen parameters (a LoRA run's base model) never change: they are read from the model
# directory again, so a checkpoint holds only what training changed. Loading is therefore not
# strict about the frozen keys; DCP itself fails on any requested key the checkpoint lacks.
_OPTIONS = StateDictOptions(ignore_frozen_params=True)
_LOAD_OPTIONS = StateDictOptions(ignore_frozen_params=True, strict=False)
_STEP = re.compile(r"step_(\d+)")
_EXTRA, _SCHEDULER, _DCP = "extra.json", "scheduler.json", "dcp"


def _partial(directory: Path) -> Path:
    return directory.parent / f".{directory.name}.partial"


def publish(partial: Path, directory: Path) -> None:
    """Puts a finished ``partial`` directory in place of ``directory`` by renames: a reader
    sees the old complete version, then (briefly) none, then the new one, never half of one."""
    old = directory.parent / f".{directory.name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if directory.exists():
        directory.rename(old)
    partial.rename(directory)
    shutil.rmtree(old, ignore_errors=True)


@contextmanager
def atomic_directory(directory: Path) -> Iterator[Path]:
    """Yields an empty hidden directory to fill; publishes it as ``directory`` on success and
    leaves only the hidden directory behind when the block fails or the process dies."""
    partial = _partial(directory)
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    yield partial
    publish(partial, directory)


def save_checkpoint(
    directory: Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: LRScheduler,
    extra: dict[str, Any],
) -> None:
    """Collective: every rank writes its shards and RNG state; rank 0 writes the JSON files
    and publishes the directory once all ranks are done."""
    rank, world = distributed.rank_and_world()
    partial = _partial(directory)
    if rank == 0:
        shutil.rmtree(partial, ignore_errors=True)
    distributed.barrier()
    partial.mkdir(parents=True, exist_ok=True)
    model_state, optimizer_state = get_state_dict(model, optimizer, options=_OPTIONS)
    with _quiet_single_process():
        dcp.save(
            {"model": model_state, "optimizer": optimizer_state},
            checkpoint_id=partial / _DCP,
            no_dist=world == 1,
        )
    torch.save(_rng_state(), partial / f"rng_rank{rank}.pt")
    if rank == 0:
        (partial / _SCHEDULER).write_text(json.dumps(scheduler.state_dict()))
        (partial / _EXTRA).write_text(json.dumps(extra))
    distributed.barrier()
    if rank == 0:
        publish(partial, directory)
    distributed.barrier()


def load_checkpoint(
    directory: Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: LRScheduler,
) -> dict[str, Any]:
    """Collective: restores what ``save_checkpoint`` wrote and returns its ``extra``. The
    weights and optimizer reshard to the current world size; a rank that had no RNG file
    (the world grew) keeps its current RNG state."""
    rank, world = distributed.rank_and_world()
    model_state, optimizer_state = get_state_dict(model, optimizer, options=_OPTIONS)
    state = {"model": model_state, "optimizer": optimizer_state}
    with _quiet_single_process():
        dcp.load(state, checkpoint_id=directory / _DCP, no_dist=world == 1)
    set_state_dict(
        model,
        optimizer,
        model_state_dict=state["model"],
        optim_state_dict=state["optimizer"],
        options=_LOAD_OPTIONS,
    )
    scheduler.load_state_dict(json.loads((directory / _SCHEDULER).read_text()))
    rng_file = directory / f"rng_rank{rank}.pt"
    if rng_file.exists():
        _set_rng_state(torch.load(rng_file, weights_only=True))
    return json.loads((directory / _EXTRA).read_text())


@contextmanager
def _quiet_single_process() -> Iterator[None]:
    """DCP warns on every single-process save and load, which is intended here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        yield


def _rng_state() -> dict[str, Any]:
    name, keys, position, has_gauss, cached = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": (name, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, cached),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state() if torch.cuda.is_available() else None,
    }


def _set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    name, keys, position, has_gauss, cached = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), position, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if state["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def complete_checkpoints(root: Path) -> list[Path]:
    """The published ``step_N`` directories under ``root``, oldest step first."""
    if not root.is_dir():
        return []
    found = [
        (int(match.group(1)), path)
        for path in root.iterdir()
        if (match := _STEP.fullmatch(path.name)) and (path / _EXTRA).is_file()
    ]
    return [path for _, path in sorted(found)]


def latest_checkpoint(root: Path) -> Path | None:
    """The complete checkpoint of the highest step, or None."""
    complete = complete_checkpoints(root)
    return complete[-1] if complete else None


def prune_checkpoints(root: Path, keep: int) -> None:
    """Deletes all but the ``keep`` newest complete checkpoints, and leftovers of interrupted
    saves. Call it between saves (rank 0), never while one is being written."""
    for old in complete_checkpoints(root)[:-keep]:
        shutil.rmtree(old)
    for leftover in root.glob(".step_*"):
        shutil.rmtree(leftover, ignore_errors=True)
