"""Client channels, built in one place for every caller (trainer, profiler, CLI, benchmarks).

Each channel spreads its calls over every address of its target (gRPC's ``round_robin``; or
sticks to one, ``pick_first``, for a stateful service such as the policy), speaks
TLS and sends the bearer token when the security section says so (drkernel.credentials), pings
idle connections so that a vanished server is noticed, and retries busy or restarting servers
with gRPC's own retry policy: services answer RESOURCE_EXHAUSTED (with a
``grpc-retry-pushback-ms`` hint) or UNAVAILABLE, and callers back off instead of failing; a retry
may land on another replica.

Addresses:

- ``host:port`` or ``dns:///host:port``: every address the name resolves to (a Kubernetes
  headless Service resolves to one per ready pod). gRPC resolves again when a connection ends,
  which servers force every ``server.max_connection_age_seconds``, so new replicas get calls.
- ``10.0.0.1:50051,10.0.0.2:50051``: a fixed list of IP addresses (gRPC's ``ipv4:``/``ipv6:``
  targets). Host names have no list form: give ``dns:///name:port`` instead.
- any other gRPC target (``unix:...``, ``ipv4:...``) is passed on as it is.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass

import grpc

from drkernel.credentials import channel_credentials
from drkernel.errors import InvalidArgument
from drkernel.sections import SecuritySettings

# Clients ping an idle connection this often and drop it when no answer comes within the
# timeout; servers (drkernel.serving) accept pings this frequent.
KEEPALIVE_SECONDS = 30
KEEPALIVE_TIMEOUT_SECONDS = 10
DEFAULT_MAX_MESSAGE_BYTES = 256 * 2**20


@dataclass(frozen=True)
class Target:
    """A gRPC target; for an address list, also the host its server certificates must name
    (gRPC cannot take it from the list), None when the list holds several hosts."""

    uri: str
    is_list: bool = False
    tls_host: str | None = None


def _split_host_port(entry: str, address: str) -> tuple[str, int]:
    host, separator, port = entry.rpartition(":")
    if not separator or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidArgument(f"address list {address!r}: {entry!r} is not HOST:PORT")
    return host.removeprefix("[").removesuffix("]"), int(port)


def parse_target(address: str) -> Target:
    """The gRPC target for an address as the settings and flags take it (see the module doc)."""
    if "," not in address:
        return Target(address)
    entries = [_split_host_port(entry.strip(), address) for entry in address.split(",")]
    versions = set()
    for host, port in entries:
        try:
            versions.add(ipaddress.ip_address(host).version)
        except ValueError:
            raise InvalidArgument(
                f"address list {address!r}: {host!r} is not an IP address; for a host name give "
                f"dns:///{host}:{port}, which spreads calls over every address it resolves to"
            ) from None
    if versions == {4}:
        uri = "ipv4:" + ",".join(f"{host}:{port}" for host, port in entries)
    elif versions == {6}:
        uri = "ipv6:" + ",".join(f"[{host}]:{port}" for host, port in entries)
    else:
        raise InvalidArgument(f"address list {address!r} mixes IPv4 and IPv6 addresses")
    hosts = {host for host, _ in entries}
    return Target(uri, is_list=True, tls_host=hosts.pop() if len(hosts) == 1 else None)


def channel_options(
    address: str,
    service: str,
    security: SecuritySettings,
    *,
    spread: bool = True,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    attempts: int = 5,
) -> tuple[str, list[tuple[str, object]]]:
    """The target URI and channel options for ``address``: round-robin (or, without
    ``spread``, one server at a time), keepalive, message limits, retries with exponential
    backoff for every method of ``service``, and the name checked in server certificates where
    the target does not give it."""
    target = parse_target(address)
    config = {
        "loadBalancingConfig": [{"round_robin" if spread else "pick_first": {}}],
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
        ],
    }
    options: list[tuple[str, object]] = [
        ("grpc.service_config", json.dumps(config)),
        ("grpc.enable_retries", 1),
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.keepalive_time_ms", KEEPALIVE_SECONDS * 1000),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_SECONDS * 1000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
    ]
    if security.tls_ca_file is not None:
        name = security.tls_server_name or target.tls_host
        if name is None and target.is_list:
            raise InvalidArgument(
                f"address list {address!r} names several hosts: set security.tls_server_name to the name "
                "the servers' certificates carry"
            )
        if name is not None:
            options.append(("grpc.ssl_target_name_override", name))
    return target.uri, options


def open_channel(address: str, service: str, security: SecuritySettings, *, spread: bool = True) -> grpc.Channel:
    """A blocking channel to ``address`` (see the module doc) for calls to ``service``."""
    uri, options = channel_options(address, service, security, spread=spread)
    credentials = channel_credentials(security)
    if credentials is None:
        return grpc.insecure_channel(uri, options=options)
    return grpc.secure_channel(uri, credentials, options=options)


def open_aio_channel(
    address: str, service: str, security: SecuritySettings, *, spread: bool = True
) -> grpc.aio.Channel:
    """An asyncio channel to ``address`` (see the module doc) for calls to ``service``."""
    uri, options = channel_options(address, service, security, spread=spread)
    credentials = channel_credentials(security)
    if credentials is None:
        return grpc.aio.insecure_channel(uri, options=options)
    return grpc.aio.secure_channel(uri, credentials, options=options)
