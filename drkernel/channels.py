"""Client channels with gRPC's own retry policy: services answer RESOURCE_EXHAUSTED (with a
`grpc-retry-pushback-ms` hint) or UNAVAILABLE when busy or restarting, and callers back off and
retry instead of failing.

A target that names several servers (``dns:///sandbox.ns.svc:50051`` resolving to many pods,
``ipv4:10.0.0.1:50051,10.0.0.2:50051``) gets gRPC's ``round_robin`` balancing, so calls spread
over every server it resolves to; a plain ``host:port`` keeps gRPC's default (one connection)."""

from __future__ import annotations

import json

import grpc

# Target schemes that resolve to several addresses (gRPC's naming: dns, ipv4 and ipv6 lists).
_MULTI_ADDRESS_SCHEMES = ("dns:", "ipv4:", "ipv6:")


def balances(target: str) -> bool:
    """Whether calls to ``target`` are spread over every address it resolves to."""
    return target.startswith(_MULTI_ADDRESS_SCHEMES)


def retrying_channel_options(
    service: str, max_message_bytes: int = 256 * 2**20, attempts: int = 5, round_robin: bool = False
) -> list[tuple[str, object]]:
    """Channel options enabling retries with exponential backoff for every method of a service,
    and round-robin balancing over the resolved addresses if asked."""
    config: dict[str, object] = {
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
    if round_robin:
        config["loadBalancingConfig"] = [{"round_robin": {}}]
    return [
        ("grpc.service_config", json.dumps(config)),
        ("grpc.enable_retries", 1),
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
    ]


def insecure_channel(address: str, service: str) -> grpc.Channel:
    """A blocking channel to ``address`` (host:port or a gRPC target) that retries busy answers."""
    return grpc.insecure_channel(address, options=retrying_channel_options(service, round_robin=balances(address)))


def insecure_aio_channel(address: str, service: str) -> grpc.aio.Channel:
    """An asyncio channel to ``address`` (host:port or a gRPC target) that retries busy answers."""
    return grpc.aio.insecure_channel(address, options=retrying_channel_options(service, round_robin=balances(address)))
