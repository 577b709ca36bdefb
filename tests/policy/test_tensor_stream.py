"""Reassembling streamed tensors: round trips and every way a stream can be wrong."""

from __future__ import annotations

import pytest
import torch

from drkernel.errors import InvalidArgument
from services.policy.client import tensor_update_requests
from services.policy.tensor_stream import TensorAssembler, TensorSpec


def assemble(tensors: dict[str, torch.Tensor], chunk_bytes: int) -> dict[str, torch.Tensor]:
    """Sends tensors through the client's message stream and reassembles them."""
    from services.policy.servicer import _DTYPE

    messages = list(tensor_update_requests(tensors, chunk_bytes=chunk_bytes))
    specs = [TensorSpec(s.name, _DTYPE[s.dtype], tuple(s.shape)) for s in messages[0].header.tensors.tensors]
    assembler = TensorAssembler(specs, max_total_bytes=2**30)
    for message in messages[1:]:
        assembler.add(message.chunk.tensor_index, message.chunk.offset_bytes, message.chunk.data)
    return assembler.tensors()


def test_tensors_of_every_dtype_and_shape_round_trip() -> None:
    torch.manual_seed(0)
    tensors = {
        "a": torch.randn(7, 13),
        "b": torch.randn(5, 3, 2).to(torch.bfloat16),
        "c": torch.randn(11).to(torch.float16),
        "scalar": torch.tensor(3.5),
        "empty": torch.zeros(0, 4),
    }
    out = assemble(tensors, chunk_bytes=10)
    assert list(out) == list(tensors)
    for name, tensor in tensors.items():
        assert out[name].dtype == tensor.dtype and out[name].shape == tensor.shape
        assert torch.equal(out[name], tensor)


def spec(name: str = "w", shape: tuple[int, ...] = (2, 2)) -> TensorSpec:
    return TensorSpec(name, "float32", shape)


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        ([], "manifest is empty"),
        ([spec("w"), spec("w")], "names repeat"),
        ([spec("")], "has no name"),
        ([TensorSpec("w", "int8", (2,))], "dtype must be one of"),
        ([spec(shape=(1024, 1024))], "this server takes at most 1000"),
    ],
)
def test_bad_manifests_are_refused(specs: list[TensorSpec], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        TensorAssembler(specs, max_total_bytes=1000)


def test_bad_chunks_are_refused() -> None:
    assembler = TensorAssembler([spec()], max_total_bytes=1000)
    with pytest.raises(InvalidArgument, match="names tensor 1; the manifest has 1"):
        assembler.add(1, 0, b"\0" * 4)
    with pytest.raises(InvalidArgument, match="chunk at byte 4, expected 0"):
        assembler.add(0, 4, b"\0" * 4)
    assembler.add(0, 0, b"\0" * 12)
    with pytest.raises(InvalidArgument, match="more than the 16 bytes"):
        assembler.add(0, 12, b"\0" * 8)
    with pytest.raises(InvalidArgument, match="received 12 of 16 bytes"):
        assembler.tensors()
    assembler.add(0, 12, b"\0" * 4)
    assert torch.equal(assembler.tensors()["w"], torch.zeros(2, 2))
