"""The process group of a run: one process, or one per GPU under ``torchrun``.

Single controller: rank 0 runs the rollouts while the other ranks wait for its rows in
``broadcast_object``. That wait can last as long as a rollout (minutes of generation and
sandbox evaluations), so control messages travel over a CPU (gloo) group with a long timeout:
NCCL's watchdog would otherwise kill the waiting ranks after its default ten minutes, and a
CPU group keeps pickled objects off the GPU. Tensors (FSDP2's collectives) use the default
group: NCCL on GPUs, gloo on CPUs.

Without torchrun's environment every function is a no-op on a single process, so the same
code runs in tests, in the CLI and under torchrun.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

# Longest wait of one rank for another: a whole rollout step, with a wide margin.
COLLECTIVE_TIMEOUT = timedelta(hours=4)

_control_group: dist.ProcessGroup | None = None


def init_distributed() -> tuple[int, int, torch.device]:
    """Joins torchrun's process group (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT) and
    returns (rank, world size, this rank's device); a single process (rank 0 of 1, the first
    GPU or the CPU) when those variables are absent."""
    global _control_group
    cuda = torch.cuda.is_available()
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        return 0, 1, torch.device("cuda:0" if cuda else "cpu")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", timeout=COLLECTIVE_TIMEOUT, device_id=device)
        _control_group = dist.new_group(backend="gloo", timeout=COLLECTIVE_TIMEOUT)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", timeout=COLLECTIVE_TIMEOUT)
        _control_group = None  # the default group is already a CPU group
    return dist.get_rank(), dist.get_world_size(), device


def rank_and_world() -> tuple[int, int]:
    """(rank, world size) of this process; (0, 1) without a process group."""
    if not dist.is_initialized():
        return 0, 1
    return dist.get_rank(), dist.get_world_size()


def local_rank() -> int:
    """This process's rank on its node (torchrun's LOCAL_RANK); 0 without a process group."""
    if not dist.is_initialized():
        return 0
    return int(os.environ.get("LOCAL_RANK", "0"))


def broadcast_object(obj: Any) -> Any:
    """Rank 0's ``obj`` on every rank (what the other ranks pass is ignored)."""
    if not dist.is_initialized():
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0, group=_control_group)
    return box[0]


def all_gather_object(obj: Any) -> list[Any]:
    """Every rank's ``obj``, in rank order."""
    if not dist.is_initialized():
        return [obj]
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, obj, group=_control_group)
    return gathered


def all_reduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    """Sums ``tensor`` over ranks in place (on the tensors' group: NCCL on GPUs) and returns it."""
    if dist.is_initialized():
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def barrier() -> None:
    """Waits until every rank arrives."""
    if dist.is_initialized():
        dist.barrier(group=_control_group)


def shutdown() -> None:
    """Leaves the process group (a no-op without one)."""
    global _control_group
    if dist.is_initialized():
        dist.destroy_process_group()
    _control_group = None
