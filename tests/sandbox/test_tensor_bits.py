"""Snapshots and the hand-over of outputs read tensors past whatever the candidate patched
(services/sandbox/shared/tensor_bits.py), and the integrity watch sees what lies below Python
(services/sandbox/candidate/integrity.py)."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from services.sandbox.candidate.integrity import IntegrityWatch
from services.sandbox.shared.tensor_bits import Snapshot
from services.sandbox.wire.tensors import pack_tensors, unpack_tensors

_PATCHED = ("clone", "detach", "contiguous", "reshape", "view", "copy_", "numel", "element_size")


@pytest.fixture
def lying_tensors(monkeypatch):
    """torch.Tensor's methods and properties replaced by ones that lie (restored afterwards)."""

    def lie(self, *args, **kwargs):
        return torch.zeros(3)

    for name in _PATCHED:
        monkeypatch.setattr(torch.Tensor, name, lie)
    monkeypatch.setattr(torch.Tensor, "shape", property(lambda self: torch.Size([3])))
    monkeypatch.setattr(torch.Tensor, "dtype", property(lambda self: torch.float64))


def test_a_snapshot_sees_the_memory_whatever_tensor_methods_became(lying_tensors):
    x = torch.ones(3, 4)
    snapshot = Snapshot(x)
    assert snapshot.unchanged(x)
    torch.ops.aten.fill_(x, 2.0)  # a late write, through the dispatcher
    assert not snapshot.unchanged(x)


def test_the_outputs_handed_over_are_their_bytes_whatever_tensor_methods_became(lying_tensors, monkeypatch):
    x = torch.full((2, 5), 7.0).t()  # not contiguous
    metas, payload, _, _ = pack_tensors([x])
    monkeypatch.undo()  # the judge's process, where the bytes arrive, is not the candidate's
    assert (metas[0].shape, metas[0].dtype) == ([5, 2], "float32")
    [received] = unpack_tensors(metas, payload)
    assert torch.equal(received, torch.full((5, 2), 7.0))


def test_a_dispatch_mode_left_on_is_tampering():
    watch = IntegrityWatch()
    mode = TorchDispatchMode()
    mode.__enter__()
    try:
        assert "the dispatch mode stack (a TorchDispatchMode left on)" in watch.changed()
    finally:
        mode.__exit__(None, None, None)
    assert watch.changed() == []
