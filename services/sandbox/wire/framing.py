"""How every message between the sandbox's processes travels over a socket.

A peer may be untrusted (the candidate's process) or run untrusted code (the judge runs the
task's own), so nothing received is unpickled: every message is a length-prefixed JSON header
validated by a pydantic model (unknown fields rejected, sizes bounded) followed by an optional
raw payload, such as output tensors as bytes.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from collections.abc import Sequence
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter

# The message types one side of a conversation may receive (a union of models).
Received = TypeVar("Received")

_PREFIX = struct.Struct("!IQ")  # header length, payload length
MAX_HEADER_BYTES = 8 * 2**20
_DISCARD_CHUNK_BYTES = 2**20


class ProtocolError(Exception):
    """The peer sent something malformed, or hung up."""


class Message(BaseModel):
    """A message header: immutable, and nothing beyond its declared fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Shutdown(Message):
    """Exit (the server tells its judge, the judge its candidate)."""

    kind: Literal["shutdown"] = "shutdown"


def send(sock: socket.socket, message: BaseModel, payload: bytes | memoryview = b"", fds: Sequence[int] = ()) -> None:
    """Writes one framed message, optionally passing file descriptors along with it."""
    header = message.model_dump_json().encode()
    head = _PREFIX.pack(len(header), len(payload)) + header
    if fds:
        sent = socket.send_fds(sock, [head], list(fds))
        sock.sendall(head[sent:])
    else:
        sock.sendall(head)
    if payload:
        sock.sendall(payload)


def _read_exactly(sock: socket.socket, size: int) -> bytearray:
    buffer = bytearray(size)
    view = memoryview(buffer)
    while view:
        received = sock.recv_into(view)
        if received == 0:
            raise ProtocolError("peer closed the connection")
        view = view[received:]
    return buffer


def receive(sock: socket.socket, adapter: TypeAdapter[Received], max_payload_bytes: int) -> tuple[Received, bytearray]:
    """Reads one framed message and validates its header; raises ProtocolError."""
    message, payload, _ = _receive(sock, adapter, max_payload_bytes, max_fds=0)
    return message, payload


def receive_with_fds(
    sock: socket.socket, adapter: TypeAdapter[Received], max_payload_bytes: int, max_fds: int
) -> tuple[Received, bytearray, list[int]]:
    """Like receive, also returning the file descriptors that came with the message."""
    return _receive(sock, adapter, max_payload_bytes, max_fds)


def _receive(
    sock: socket.socket, adapter: TypeAdapter[Received], max_payload_bytes: int, max_fds: int
) -> tuple[Received, bytearray, list[int]]:
    message, payload_size, fds = receive_header(sock, adapter, max_payload_bytes, max_fds)
    try:
        return message, read_payload(sock, payload_size), fds
    except BaseException:
        close_fds(fds)
        raise


def receive_header(
    sock: socket.socket, adapter: TypeAdapter[Received], max_payload_bytes: int, max_fds: int
) -> tuple[Received, int, list[int]]:
    """Reads one framed message up to its payload: the validated header, the size of the
    payload still to be read (read_payload) or skipped (discard_payload), and the file
    descriptors that came with it, so that a receiver can decide from the header how much
    of an untrusted payload it is willing to hold."""
    fds: list[int] = []
    try:
        if max_fds:
            data, fds, _, _ = socket.recv_fds(sock, _PREFIX.size, max_fds)
            if not data:
                raise ProtocolError("peer closed the connection")
            prefix = bytes(data) + bytes(_read_exactly(sock, _PREFIX.size - len(data)))
        else:
            prefix = bytes(_read_exactly(sock, _PREFIX.size))
        header_size, payload_size = _PREFIX.unpack(prefix)
        if header_size > MAX_HEADER_BYTES or payload_size > max_payload_bytes:
            raise ProtocolError(f"message too large ({header_size} + {payload_size} bytes)")
        header = _read_exactly(sock, header_size)
        try:
            message = adapter.validate_python(json.loads(header))
        except ValueError as error:
            raise ProtocolError(f"malformed message: {str(error)[:500]}") from error
    except BaseException:
        close_fds(fds)
        raise
    return message, payload_size, fds


def read_payload(sock: socket.socket, size: int) -> bytearray:
    """The payload announced by receive_header, in one buffer."""
    return _read_exactly(sock, size) if size else bytearray()


def discard_payload(sock: socket.socket, size: int) -> None:
    """Reads and drops a payload announced by receive_header in fixed chunks, keeping the
    conversation in step without ever holding the payload."""
    chunk = bytearray(min(size, _DISCARD_CHUNK_BYTES))
    view = memoryview(chunk)
    while size:
        received = sock.recv_into(view[: min(size, len(chunk))])
        if received == 0:
            raise ProtocolError("peer closed the connection")
        size -= received


def close_fds(fds: Sequence[int]) -> None:
    """Closes received file descriptors that will not be used."""
    for fd in fds:
        os.close(fd)
