"""Client channels with gRPC's own retry policy: services answer RESOURCE_EXHAUSTED (with a
`grpc-retry-pushback-ms` hint) or UNAVAILABLE when busy or restarting, and callers back off and
retry instead of failing."""

from __future__ import annotations

import json

import grpc


def retrying_channel_options(
    service: str, max_message_bytes: int = 256 * 2**20, attempts: int = 5
) -> list[tuple[str, object]]:
    """Channel options enabling retries with exponential backoff for every method of a service."""
    config = {
        "methodConfig": [
            {
                "name": [{"service": service}],
                "retryPolicy": {
                    "maxAttempts": attempts,
                    "initialBackoff": "0.5s",
                    "maxBackoff": "10s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["RESOURCE_EXHAUSTED", "UNAVAILABLE"],
                },
            }
        ]
    }
    return [
        ("grpc.service_config", json.dumps(config)),
        ("grpc.enable_retries", 1),
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
    ]


def insecure_channel(address: str, service: str) -> grpc.Channel:
    """A blocking channel to ``address`` (host:port) that retries busy answers."""
    return grpc.insecure_channel(address, options=retrying_channel_options(service))


def insecure_aio_channel(address: str, service: str) -> grpc.aio.Channel:
    """An asyncio channel to ``address`` that retries busy answers."""
    return grpc.aio.insecure_channel(address, options=retrying_channel_options(service))
