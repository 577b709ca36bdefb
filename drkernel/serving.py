"""gRPC server bootstrap shared by every service.

One place for what each service needs around its servicer: stock health checking and
reflection, Prometheus metrics, the mapping of exceptions to status codes, refusal of
undecodable requests with INVALID_ARGUMENT, TLS and the bearer-token check (the security
section), connections recycled every ``max_connection_age_seconds`` so that round-robin clients
find new replicas, keepalive, and a graceful stop on SIGTERM that lets in-flight calls finish.
"""

from __future__ import annotations

import asyncio
import hmac
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast
from wsgiref.simple_server import WSGIServer

import grpc
import prometheus_client
from google.protobuf.message import DecodeError
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from drkernel.channels import KEEPALIVE_SECONDS, KEEPALIVE_TIMEOUT_SECONDS
from drkernel.credentials import bearer_token, server_credentials
from drkernel.errors import (
    DrKernelError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
    Unavailable,
)
from drkernel.logs import get_logger
from drkernel.sections import SecuritySettings, ServerSettings

log = get_logger(__name__)

RPC_TOTAL = prometheus_client.Counter(
    "drkernel_rpc_total", "Finished RPCs by method and status code.", ["method", "code"]
)
RPC_SECONDS = prometheus_client.Histogram(
    "drkernel_rpc_duration_seconds",
    "RPC latency by method.",
    ["method"],
    buckets=(0.005, 0.05, 0.25, 1, 2.5, 5, 10, 30, 60, 120, 300, 900),
)

_STATUS_FOR: dict[type[DrKernelError], grpc.StatusCode] = {
    InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    ResourceExhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Unavailable: grpc.StatusCode.UNAVAILABLE,
    FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    NotFound: grpc.StatusCode.NOT_FOUND,
}

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")

RETRY_PUSHBACK_KEY = "grpc-retry-pushback-ms"
# Probes (Kubernetes' grpc probes, load balancers) carry no token; neither leaks anything.
_OPEN_METHODS = ("/grpc.health.v1.Health/", "/grpc.reflection.")
_STOP_MARGIN_SECONDS = 10.0  # past the grace period, for gRPC to cancel what is left


def status_for(error: BaseException) -> tuple[grpc.StatusCode, str, tuple[tuple[str, str], ...]]:
    """Maps an exception to (status code, message, trailing metadata). Unknown errors are
    INTERNAL with a reference to the log line, never the exception text."""
    for kind, code in _STATUS_FOR.items():
        if isinstance(error, kind):
            trailers: tuple[tuple[str, str], ...] = ()
            if isinstance(error, ResourceExhausted):
                trailers = ((RETRY_PUSHBACK_KEY, str(error.retry_after_ms)),)
            return code, str(error), trailers
    incident = uuid.uuid4().hex[:12]
    log.error("internal error", incident=incident, exc_info=error)
    return grpc.StatusCode.INTERNAL, f"internal server error (incident {incident})", ()


@dataclass(frozen=True)
class ServiceBinding:
    """A servicer ready to be added to a server under its full proto service name."""

    name: str
    register: Callable[[grpc.aio.Server], None]


class _Authenticator(grpc.aio.ServerInterceptor):
    """Refuses calls without the shared bearer token with UNAUTHENTICATED, before their request
    is read; health checks and reflection stay open. Refusals count in drkernel_rpc_total."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[_Request, _Response] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[_Request, _Response] | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith(_OPEN_METHODS):
            return handler
        refusal = self._refusal(handler_call_details.invocation_metadata or ())
        if refusal is None:
            return handler
        RPC_TOTAL.labels(method, grpc.StatusCode.UNAUTHENTICATED.name).inc()
        return _refusing(handler, refusal)

    def _refusal(self, metadata: Sequence[tuple[str, str | bytes]]) -> str | None:
        """Why the call is refused, or None when it carries the token (compared in constant time)."""
        given = [value for key, value in metadata if key == "authorization"]
        if not given:
            return "this server requires a bearer token (metadata 'authorization: Bearer <token>'; security.token_file)"
        value = given[0] if isinstance(given[0], bytes) else given[0].encode()
        if len(given) > 1 or not hmac.compare_digest(value, self._expected):
            return "the bearer token is not this server's (security.token_file)"
        return None


def _refusing(handler: grpc.RpcMethodHandler[Any, Any], message: str) -> grpc.RpcMethodHandler[Any, Any]:
    """A handler of the same kind as ``handler`` that answers UNAUTHENTICATED without reading
    the request."""

    async def refuse(_request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    out = handler.response_serializer
    if handler.unary_unary:
        return grpc.unary_unary_rpc_method_handler(refuse, response_serializer=out)
    if handler.unary_stream:
        return grpc.unary_stream_rpc_method_handler(refuse, response_serializer=out)
    if handler.stream_unary:
        return grpc.stream_unary_rpc_method_handler(refuse, response_serializer=out)
    return grpc.stream_stream_rpc_method_handler(refuse, response_serializer=out)


class _Interceptor(grpc.aio.ServerInterceptor):
    """Parses requests itself (bad bytes -> INVALID_ARGUMENT), maps exceptions, records metrics."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[_Request, _Response] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[_Request, _Response] | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith(_OPEN_METHODS):
            return handler
        parse = handler.request_deserializer
        out = handler.response_serializer
        wrapped: grpc.RpcMethodHandler[bytes, _Response]
        if handler.unary_unary:
            wrapped = grpc.unary_unary_rpc_method_handler(
                _unary(handler.unary_unary, method, parse), response_serializer=out
            )
        elif handler.unary_stream:
            wrapped = grpc.unary_stream_rpc_method_handler(
                _unary_stream(handler.unary_stream, method, parse), response_serializer=out
            )
        elif handler.stream_unary:
            wrapped = grpc.stream_unary_rpc_method_handler(
                _stream_unary(handler.stream_unary, method, parse), response_serializer=out
            )
        else:
            wrapped = grpc.stream_stream_rpc_method_handler(
                _stream_stream(handler.stream_stream, method, parse), response_serializer=out
            )
        # The wrapper has no request deserializer, so gRPC hands it bytes that it decodes itself;
        # grpc's types assume an interceptor keeps the request type of the handler it wraps.
        return cast("grpc.RpcMethodHandler[_Request, _Response]", wrapped)


async def _decode(raw: bytes, parse: Callable[[bytes], Any], context: grpc.aio.ServicerContext[Any, Any]) -> Any:
    try:
        return parse(raw)
    except (DecodeError, ValueError, UnicodeDecodeError) as error:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"request could not be decoded: {error}")


async def _decode_stream(
    raws: AsyncIterator[bytes], parse: Callable[[bytes], Any], context: grpc.aio.ServicerContext[Any, Any]
) -> AsyncIterator[Any]:
    async for raw in raws:
        yield await _decode(raw, parse, context)


class _Outcome:
    """Times one call and records its status code once it ends."""

    def __init__(self, method: str, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        self.method, self.context, self.start = method, context, time.perf_counter()
        self.code = grpc.StatusCode.OK

    async def fail(self, error: BaseException) -> None:
        if isinstance(error, grpc.aio.AbortError):
            self.code = self.context.code() or grpc.StatusCode.UNKNOWN
            raise error
        if isinstance(error, asyncio.CancelledError):
            self.code = grpc.StatusCode.CANCELLED
            raise error
        self.code, message, trailers = status_for(error)
        if trailers:
            self.context.set_trailing_metadata(trailers)
        await self.context.abort(self.code, message)

    def close(self) -> None:
        RPC_TOTAL.labels(self.method, self.code.name).inc()
        RPC_SECONDS.labels(self.method).observe(time.perf_counter() - self.start)


def _unary(behavior: Any, method: str, parse: Any) -> Any:
    async def call(raw: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        outcome = _Outcome(method, context)
        try:
            return await behavior(await _decode(raw, parse, context), context)
        except BaseException as error:  # noqa: BLE001 - re-raised or turned into a status
            await outcome.fail(error)
        finally:
            outcome.close()

    return call


def _unary_stream(behavior: Any, method: str, parse: Any) -> Any:
    async def call(raw: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
        outcome = _Outcome(method, context)
        try:
            async for response in behavior(await _decode(raw, parse, context), context):
                yield response
        except BaseException as error:  # noqa: BLE001 - re-raised or turned into a status
            await outcome.fail(error)
        finally:
            outcome.close()

    return call


def _stream_unary(behavior: Any, method: str, parse: Any) -> Any:
    async def call(raws: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        outcome = _Outcome(method, context)
        try:
            return await behavior(_decode_stream(raws, parse, context), context)
        except BaseException as error:  # noqa: BLE001 - re-raised or turned into a status
            await outcome.fail(error)
        finally:
            outcome.close()

    return call


def _stream_stream(behavior: Any, method: str, parse: Any) -> Any:
    async def call(raws: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
        outcome = _Outcome(method, context)
        try:
            async for response in behavior(_decode_stream(raws, parse, context), context):
                yield response
        except BaseException as error:  # noqa: BLE001 - re-raised or turned into a status
            await outcome.fail(error)
        finally:
            outcome.close()

    return call


@dataclass
class RunningServer:
    """A started server with the ports it bound and a way to stop it gracefully."""

    server: grpc.aio.Server
    health: health.aio.HealthServicer
    port: int
    metrics_port: int | None
    grace_seconds: float
    health_server: grpc.aio.Server | None = None
    health_port: int | None = None

    async def stop(self) -> None:
        """Marks the server NOT_SERVING, refuses new calls and waits for in-flight ones (a
        bounded wait: a stop that gRPC does not finish is logged, not waited on forever)."""
        await self.health.enter_graceful_shutdown()
        limit = self.grace_seconds + _STOP_MARGIN_SECONDS
        try:
            await asyncio.wait_for(self.server.stop(self.grace_seconds), limit)
        except TimeoutError:
            log.error("gRPC server did not stop in time", port=self.port, waited_seconds=limit)
        if self.health_server is not None:
            await self.health_server.stop(None)


async def _start_health_server(
    servicer: health.aio.HealthServicer, host: str, port: int
) -> tuple[grpc.aio.Server, int]:
    """A plaintext server of the health service alone, for probes that cannot speak TLS or
    present a client certificate (Kubernetes' grpc probes): it tells SERVING or NOT_SERVING and
    nothing else."""
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise Unavailable(f"could not bind the health port {host}:{port}")
    await server.start()
    return server, bound


def serve_metrics(port: int) -> WSGIServer:
    """Serves this process's Prometheus registry at ``/metrics`` on ``port`` of every interface
    from a daemon thread (0 picks a free port: read ``server_port``). The services serve it for
    their whole life; a caller that stops earlier calls ``shutdown()`` then ``server_close()``."""
    try:
        server, _ = prometheus_client.start_http_server(port)
    except OSError as error:
        raise Unavailable(f"could not bind the metrics port {port}: {error.strerror}") from error
    return server


def server_options(settings: ServerSettings) -> list[tuple[str, int]]:
    """Message limits, connection age and keepalive of a server."""
    return [
        ("grpc.max_receive_message_length", settings.max_message_bytes),
        ("grpc.max_send_message_length", settings.max_message_bytes),
        ("grpc.max_connection_age_ms", round(settings.max_connection_age_seconds * 1000)),
        ("grpc.max_connection_age_grace_ms", round(settings.max_connection_age_grace_seconds * 1000)),
        # Ping idle clients to find dead ones, and allow the clients' own pings
        # (drkernel.channels), with slack, instead of closing with "too many pings": without
        # it gRPC allows one ping in 5 minutes, and a call that runs a few keepalive intervals
        # without data (a long generation or evaluation) fails with UNAVAILABLE. (gRPC core's
        # name for GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS; it ignores unknown names.)
        ("grpc.keepalive_time_ms", KEEPALIVE_SECONDS * 1000),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_SECONDS * 1000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", KEEPALIVE_SECONDS * 1000 // 2),
    ]


async def start_server(
    bindings: Sequence[ServiceBinding], settings: ServerSettings, security: SecuritySettings
) -> RunningServer:
    """Starts a gRPC server with the given services plus health, reflection and metrics; TLS and
    the token check as ``security`` says (its files are read here: a bad one fails the start)."""
    credentials = server_credentials(security)
    token = bearer_token(security)
    interceptors: list[grpc.aio.ServerInterceptor] = [_Authenticator(token)] if token is not None else []
    server = grpc.aio.server(interceptors=[*interceptors, _Interceptor()], options=server_options(settings))
    for binding in bindings:
        binding.register(server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = [b.name for b in bindings]
    reflection.enable_server_reflection(
        [*names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME],
        server,
    )
    where = f"{settings.host}:{settings.port}"
    port = server.add_insecure_port(where) if credentials is None else server.add_secure_port(where, credentials)
    if port == 0:
        raise Unavailable(f"could not bind {settings.host}:{settings.port}")
    metrics_port = None
    if settings.metrics:
        metrics_port = serve_metrics(settings.metrics_port).server_port
    await server.start()
    health_server, health_port = None, None
    if settings.health_port is not None:
        health_server, health_port = await _start_health_server(health_servicer, settings.host, settings.health_port)
    for name in ["", *names]:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    log.info(
        "serving",
        services=names,
        port=port,
        metrics_port=metrics_port,
        health_port=health_port,
        tls=credentials is not None,
        client_certificates=security.require_client_cert,
        token=token is not None,
    )
    return RunningServer(
        server, health_servicer, port, metrics_port, settings.grace_seconds, health_server, health_port
    )


async def serve_until_signalled(
    bindings: Sequence[ServiceBinding],
    settings: ServerSettings,
    security: SecuritySettings,
    on_stopped: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Runs a server until SIGTERM or SIGINT, then stops it gracefully. ``on_stopped`` runs
    after the server stopped, or when it could not start."""
    try:
        running = await start_server(bindings, settings, security)
    except BaseException:
        if on_stopped is not None:
            await on_stopped()
        raise
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("stopping", grace_seconds=settings.grace_seconds)
    await running.stop()
    if on_stopped is not None:
        await on_stopped()
    log.info("stopped")
