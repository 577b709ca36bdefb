"""Snapshots and the hand-over of outputs read tensors past whatever the candidate patched
(services/sandbox/shared/tensor_bits.py), and the integrity watch sees what lies below Python
(services/sandbox/candidate/integrity.py)."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from services.sandbox.candidate.integrity import IntegrityWatch, LibraryCode
from services.sandbox.shared import tensor_bits
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


@pytest.mark.parametrize(
    ("nbytes", "offset"),
    [(4096, 0), (4092, 0), (4093, 0), (4096, 4), (4096, 3)],
    ids=["64-bit words", "32-bit words", "bytes", "a view 4 bytes in", "a view 3 bytes in"],
)
def test_a_digest_snapshot_sees_one_flipped_bit_anywhere_and_only_a_change(
    nbytes: int, offset: int, monkeypatch
) -> None:
    """A snapshot too large to copy is a keyed digest taken chunk by chunk: one bit flipped
    in any chunk, at its first or last word or the tensor's last byte, changes it; the same
    bytes again do not; other keys give other digests. Also for a view that starts inside a
    larger tensor, at an offset no wider word divides."""
    monkeypatch.setattr(tensor_bits, "_HOST_DIGEST_MIN_BYTES", 0)
    monkeypatch.setattr(tensor_bits, "DIGEST_MIN_BYTES", 0)
    monkeypatch.setattr(tensor_bits, "_DIGEST_CHUNK_WORDS", 100)  # several chunks and a short last one
    monkeypatch.setattr(tensor_bits, "_WORD_WEIGHTS", {})
    generator = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (offset + nbytes,), dtype=torch.uint8, generator=generator)[offset:]
    snapshot = Snapshot(x)
    assert snapshot.copy is None and snapshot.unchanged(x)
    for position in (0, 7, 799, 800, 801, nbytes // 2, nbytes - 1):
        for bit in (0, 7):
            x[position] ^= 1 << bit
            assert not snapshot.unchanged(x), (position, bit)
            x[position] ^= 1 << bit
    assert snapshot.unchanged(x)
    assert len({tensor_bits._digest(x, key) for key in range(8)}) == 8


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


class _Instrument:
    def ask(self) -> str:
        return "real"


def test_a_method_replaced_on_an_instrument_object_is_tampering():
    # the class watch sees only class attributes; a method replaced on the one object the
    # harness uses (found up the candidate's own stack) is tampering too
    instrument = _Instrument()
    instrument.state = 1  # data changes as the instrument works: never reported
    watch = IntegrityWatch(instruments={"Instrument": instrument})
    instrument.state = 2
    assert watch.changed() == []
    instrument.ask = lambda: "forged"  # type: ignore[method-assign]
    assert "Instrument.ask" in watch.changed()
    del instrument.ask
    assert watch.changed() == []


def test_a_replaced_numpy_or_interpreter_function_is_tampering(monkeypatch: pytest.MonkeyPatch) -> None:
    # Triton's CPU interpreter computes with both: replacing InterpreterBuilder.create_exp made a
    # kernel written as exp return GELU under the interpreter only
    import numpy as np
    from triton.runtime.interpreter import InterpreterBuilder

    library = LibraryCode(interpreted=True)
    watch = IntegrityWatch(extra=library.current_patches)
    assert watch.changed() == []
    monkeypatch.setattr(InterpreterBuilder, "create_exp", lambda self, arg: arg)
    monkeypatch.setattr(np, "sqrt", lambda value: value)
    assert watch.changed() == ["numpy.sqrt", "triton.runtime.interpreter.InterpreterBuilder.create_exp"]
    monkeypatch.undo()
    assert watch.changed() == []
