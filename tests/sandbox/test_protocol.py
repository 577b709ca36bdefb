"""The judge <-> candidate wire format refuses what an untrusted peer could send."""

from __future__ import annotations

import os
import socket
import threading

import pytest
import torch

from services.sandbox.wire.framing import ProtocolError, receive, receive_with_fds, send
from services.sandbox.wire.judge_candidate import REPLY, LaunchRecord, Problem, ProfiledKernel, RunResult, TensorMeta
from services.sandbox.wire.tensors import pack_tensors, unpack_tensors


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool])
def test_tensors_round_trip_bit_exactly(dtype):
    tensors = [torch.randn(3, 5).to(dtype), torch.randn(()).to(dtype), torch.zeros(0, 4).to(dtype)]
    metas, payload, fds, _ = pack_tensors(tensors)
    assert fds == []
    back = unpack_tensors(metas, bytearray(payload))
    for original, copy in zip(tensors, back, strict=True):
        assert copy.dtype == original.dtype and copy.shape == original.shape
        assert torch.equal(copy, original)


def test_non_contiguous_tensors_are_sent_in_logical_order():
    x = torch.arange(12.0).reshape(3, 4).t()
    metas, payload, _, _ = pack_tensors([x])
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


def test_what_an_honest_candidate_may_report_in_excess_is_cut_not_refused():
    # PyTorch's templated CUDA kernel names run to thousands of characters: refusing one made
    # every GPU evaluation whose checked call launched such a kernel a RUNTIME_ERROR; so would
    # a long Triton kernel name, many findings or a long message
    name = "void at::native::elementwise_kernel<128, 4, " + "x" * 3000 + ">"
    launch = LaunchRecord(name="k" * 600, own=True, programs=1)
    result = RunResult(
        outputs=[],
        launches=[launch] * 3,
        problems=[Problem(severity="hack", message="m" * 3000)] * 65,
        tampered=["patched"] * 65,
        seconds=0.1,
        kernels=[ProfiledKernel(name=name, launches=1, time_us=2.0, own=False)],
    )
    left, right = socket.socketpair()
    with left, right:
        sender = threading.Thread(target=send, args=(left, result))  # more than a socket buffer holds
        sender.start()
        received, _ = receive(right, REPLY, max_payload_bytes=0)
        sender.join()
    assert received.kernels[0].name == name[:1024]
    assert received.launches[0].name == "k" * 512
    assert len(received.problems) == 64 and received.problems[0].message == "m" * 2000
    assert len(received.tampered) == 64


def _memfd_exporter(tensor):
    """Stands in for CUDA memory export (unreachable without a GPU): the bytes go into a
    memfd whose descriptor travels like the real one."""
    if tensor.numel() < 8:
        return None
    fd = os.memfd_create("output")
    os.write(fd, tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return fd, None


def _memfd_importer(fd, meta, dtype):
    try:
        data = os.pread(fd, meta.nbytes, 0)
    finally:
        os.close(fd)
    if len(data) != meta.nbytes:
        raise RuntimeError("descriptor holds fewer bytes than claimed")
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype).reshape(meta.shape)


def test_descriptors_travel_with_the_message_and_are_always_consumed():
    tensors = [torch.randn(4, 8), torch.arange(3.0), torch.randn(16)]
    metas, payload, fds, _ = pack_tensors(tensors, _memfd_exporter)
    assert [m.shared for m in metas] == [True, False, True] and len(fds) == 2
    left, right = socket.socketpair()
    with left, right:
        send(left, RunResult(outputs=metas, launches=[], problems=[], tampered=[], seconds=0.0), payload, fds)
        for fd in fds:
            os.close(fd)
        message, received_payload, received_fds = receive_with_fds(right, REPLY, 1 << 20, max_fds=8)
    back = unpack_tensors(message.outputs, received_payload, received_fds, _memfd_importer)
    assert all(torch.equal(a, b) for a, b in zip(tensors, back, strict=True))
    assert all(not _is_open(fd) for fd in received_fds)


def test_missing_extra_or_bad_descriptors_are_refused_and_closed():
    metas, payload, fds, _ = pack_tensors([torch.randn(16)], _memfd_exporter)
    with pytest.raises(ProtocolError, match="without its descriptor"):
        unpack_tensors(metas, bytearray(payload), [], _memfd_importer)
    extra = os.memfd_create("extra")
    with pytest.raises(ProtocolError, match="more descriptors"):
        unpack_tensors(metas, bytearray(payload), [fds[0], extra], _memfd_importer)
    assert not _is_open(extra) and not _is_open(fds[0])
    liar = TensorMeta(dtype="float32", shape=[1024], nbytes=4096, shared=True)
    short = os.memfd_create("short")
    with pytest.raises(ProtocolError, match="could not be imported"):
        unpack_tensors([liar], bytearray(), [short], _memfd_importer)
    assert not _is_open(short)


def _is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True
