"""`drkernel up`: the four services as separate processes on loopback, configured as the
Kubernetes manifests configure them (one settings file, DRKERNEL_* variables), to run the whole
system on one machine.

Each service runs as ``python -m drkernel serve <service>`` with the settings file in
DRKERNEL_CONFIG (so the training jobs the trainer starts read it too), bound to 127.0.0.1 on its
configured port, the profiler pointed at the sandbox. Their output is passed on, each line
prefixed with the service's name. Once every health check answers SERVING the addresses are
printed; SIGINT (Ctrl-C) or SIGTERM stops them all, each within its grace, and so does a service
that exits by itself (then ``up`` fails, with that service's last line).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from drkernel.cli import EXIT_OK, EXIT_SERVER, CliError, load_settings_for

if TYPE_CHECKING:
    from drkernel.config import Settings
    from drkernel.sections import ServerSettings

HOST = "127.0.0.1"
SERVICES = ("sandbox", "profiler", "policy", "trainer")
_POLL_SECONDS = 0.5
_STOP_MARGIN_SECONDS = 30.0


def register(commands: Any, serve_commands: Any) -> None:
    up = commands.add_parser(
        "up",
        help="Run sandbox, profiler, policy and trainer as processes on loopback until Ctrl-C.",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    up.add_argument(
        "--ready-timeout", type=float, default=600.0, help="Seconds to wait for every service to serve (default 600)."
    )
    up.set_defaults(handler=run_up)


@dataclass
class Service:
    """One service's process, its address and its last lines of output."""

    name: str
    address: str
    process: subprocess.Popen[str]
    last_lines: deque[str] = field(default_factory=lambda: deque(maxlen=20))
    forwarder: threading.Thread | None = None

    def forward(self, out: IO[str]) -> None:
        """Passes the process's output on, prefixed; keeps the last lines (runs in a thread)."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.last_lines.append(line.rstrip("\n"))
            out.write(f"{self.name:<8}| {line}")
            out.flush()

    def ended(self) -> str | None:
        """Why the process is gone, or None while it runs."""
        code = self.process.poll()
        if code is None:
            return None
        if self.forwarder is not None:
            self.forwarder.join(5)  # its last lines, which say why
        last = next((line for line in reversed(self.last_lines) if line.strip()), "no output")
        return f"{self.name} exited with code {code}: {last}"


def servers(settings: Settings) -> dict[str, ServerSettings]:
    """Each service's server settings, in the order the services start."""
    return {name: getattr(settings, name).server for name in SERVICES}


def environment(settings: Settings, args: argparse.Namespace) -> dict[str, str]:
    """The services' environment: this one, the settings file, loopback hosts and the profiler's
    sandbox address."""
    from drkernel.config import CONFIG_ENV_VAR

    env = dict(os.environ)
    if args.config is not None:
        env[CONFIG_ENV_VAR] = str(args.config.resolve())
    for name, server in servers(settings).items():
        if server.port == 0:
            raise CliError(f"up needs a fixed port for every service: {name}.server.port is 0")
        env[f"DRKERNEL_{name.upper()}__SERVER__HOST"] = HOST
    env["DRKERNEL_PROFILER__SANDBOX_ADDRESS"] = f"{HOST}:{settings.sandbox.server.port}"
    return env


def start(settings: Settings, env: dict[str, str], args: argparse.Namespace) -> list[Service]:
    log_level = ["--log-level", args.log_level] if args.log_level else []
    started = []
    for name, server in servers(settings).items():
        process = subprocess.Popen(
            [sys.executable, "-m", "drkernel", *log_level, "serve", name],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        service = Service(name, f"{HOST}:{server.port}", process)
        service.forwarder = threading.Thread(target=service.forward, args=(sys.stderr,), daemon=True)
        service.forwarder.start()
        started.append(service)
    return started


def wait_until_serving(services: list[Service], settings: Settings, timeout: float, stop: threading.Event) -> None:
    """Returns once every service's health check answers SERVING; CliError if one exits first
    or the time runs out."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from drkernel.channels import open_channel

    channels = {s.name: open_channel(s.address, "grpc.health.v1.Health", settings.security) for s in services}
    # grpcio-health-checking's stubs do not declare the methods their stub adds at run time.
    stubs: dict[str, Any] = {name: health_pb2_grpc.HealthStub(channel) for name, channel in channels.items()}
    waiting = {service.name: service for service in services}
    deadline = time.monotonic() + timeout
    try:
        while waiting and not stop.is_set():
            for name, service in list(waiting.items()):
                why = service.ended()
                if why is not None:
                    raise CliError(why, EXIT_SERVER)
                try:
                    answer = stubs[name].Check(health_pb2.HealthCheckRequest(), timeout=2)
                except grpc.RpcError:
                    continue
                if answer.status == health_pb2.HealthCheckResponse.SERVING:
                    del waiting[name]
            if waiting and time.monotonic() > deadline:
                raise CliError(f"not serving after {timeout:g} s: {', '.join(waiting)}", EXIT_SERVER)
            stop.wait(_POLL_SECONDS)
    finally:
        for channel in channels.values():
            channel.close()


def stop_all(services: list[Service], settings: Settings) -> None:
    """SIGTERM to every service, the trainer first (its runs checkpoint), then waits for each
    within its grace; SIGKILL for any still running after that."""
    limit = max(s.grace_seconds for s in servers(settings).values()) + settings.trainer.stop_grace_seconds
    for service in reversed(services):
        if service.process.poll() is None:
            service.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + limit + _STOP_MARGIN_SECONDS
    for service in reversed(services):
        try:
            service.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            service.process.kill()
            service.process.wait()
        if service.forwarder is not None:
            service.forwarder.join(5)  # the last lines, which say how it stopped


def run_up(args: argparse.Namespace) -> int:
    settings = load_settings_for(args, server=True)
    env = environment(settings, args)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    services = start(settings, env, args)
    try:
        wait_until_serving(services, settings, args.ready_timeout, stop)
        if not stop.is_set():
            width = max(len(s.name) for s in services)
            for service in services:
                print(f"{service.name:<{width}}  {service.address}", flush=True)
            sandbox, policy = (f"{HOST}:{getattr(settings, n).server.port}" for n in ("sandbox", "policy"))
            print(f"serving; runs reach them with services: {{policy: {policy}, sandbox: {sandbox}}}", flush=True)
        while not stop.is_set():
            for service in services:
                why = service.ended()
                if why is not None:
                    raise CliError(why, EXIT_SERVER)
            stop.wait(_POLL_SECONDS)
    finally:
        stop_all(services, settings)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return EXIT_OK
