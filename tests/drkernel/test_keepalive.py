"""A call that runs several keepalive intervals without sending data survives the clients'
pings: the server accepts them (drkernel.serving) instead of closing the connection with
"too many pings", which failed long generations and evaluations with UNAVAILABLE. The
interval is shortened to 1 s (both sides read the same constant; gRPC pings no more often):
without the server's permission the call failed after about 4 s."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from drkernel import channels, serving
from drkernel.sections import SecuritySettings, ServerSettings

CALL_SECONDS = 5.5


async def _slow(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    await asyncio.sleep(CALL_SECONDS)
    return b"done"


async def _call_through_keepalive() -> bytes:
    server = grpc.aio.server(options=serving.server_options(ServerSettings(host="127.0.0.1", port=0)))
    handler = grpc.method_handlers_generic_handler("test.Slow", {"Call": grpc.unary_unary_rpc_method_handler(_slow)})
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        target, options = channels.channel_options(f"127.0.0.1:{port}", "test.Slow", SecuritySettings())
        # no retry: a retried call would pass on a new connection, where the client pings half as often
        options = [(key, 0 if key == "grpc.enable_retries" else value) for key, value in options]
        async with grpc.aio.insecure_channel(target, options=options) as channel:
            response: bytes = await channel.unary_unary("/test.Slow/Call")(b"x", timeout=30)
            return response
    finally:
        await server.stop(None)


@pytest.mark.slow
def test_a_long_call_outlives_the_keepalive_pings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(channels, "KEEPALIVE_SECONDS", 1)
    monkeypatch.setattr(serving, "KEEPALIVE_SECONDS", 1)
    assert asyncio.run(_call_through_keepalive()) == b"done"
