"""The judge <-> candidate wire format refuses what an untrusted peer could send."""

from __future__ import annotations

import socket

import pytest
import torch

from services.sandbox.protocol import (
    REPLY,
    ProtocolError,
    RunResult,
    TensorMeta,
    pack_tensors,
    receive,
    send,
    unpack_tensors,
)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool])
def test_tensors_round_trip_bit_exactly(dtype):
    tensors = [torch.randn(3, 5).to(dtype), torch.randn(()).to(dtype), torch.zeros(0, 4).to(dtype)]
    metas, payload = pack_tensors(tensors)
    back = unpack_tensors(metas, bytearray(payload))
    for original, copy in zip(tensors, back):
        assert copy.dtype == original.dtype and copy.shape == original.shape
        assert torch.equal(copy, original)


def test_non_contiguous_tensors_are_sent_in_logical_order():
    x = torch.arange(12.0).reshape(3, 4).t()
    metas, payload = pack_tensors([x])
    assert torch.equal(unpack_tensors(metas, bytearray(payload))[0], x)


def test_sizes_that_do_not_add_up_are_refused():
    with pytest.raises(ProtocolError, match="do not add up"):
        unpack_tensors([TensorMeta(dtype="float32", shape=[4], nbytes=8)], bytearray(8))
    with pytest.raises(ProtocolError, match="unsupported"):
        unpack_tensors([TensorMeta(dtype="object", shape=[1], nbytes=8)], bytearray(8))
    with pytest.raises(ProtocolError, match="longer"):
        unpack_tensors([TensorMeta(dtype="float32", shape=[1], nbytes=4)], bytearray(8))


def test_messages_round_trip_and_garbage_is_refused():
    left, right = socket.socketpair()
    with left, right:
        message = RunResult(outputs=[], launches=[], problems=[], tampered=[], seconds=0.5)
        send(left, message, b"xyz")
        received, payload = receive(right, REPLY, max_payload_bytes=10)
        assert received == message and payload == b"xyz"
        left.sendall(b"\x00\x00\x00\x05" + b"\x00" * 8 + b"nope!")
        with pytest.raises(ProtocolError, match="malformed"):
            receive(right, REPLY, max_payload_bytes=10)
        send(left, message, b"x" * 11)
        with pytest.raises(ProtocolError, match="too large"):
            receive(right, REPLY, max_payload_bytes=10)
