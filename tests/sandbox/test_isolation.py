"""Faults and escape attempts against the shared server, and an escape probe run by
`drkernel eval` locally: every candidate gets a clear verdict, nothing it tries reaches the
host, the server keeps serving and no process it started survives.

Processes a candidate tries to leave behind rename themselves to a token unique to this run,
so that survivors can be found in /proc whoever else uses the machine.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.tasks import builtin_task
from tests.sandbox import corpus
from tests.sandbox.conftest import evaluate

pytestmark = pytest.mark.slow  # escape and fault probes through a real server

HERE = Path(__file__).parent
TOKEN = f"drk{secrets.token_hex(4)}"
SECRET_ENV = "DRK_TEST_SECRET"
# The shared server starts at the first test that needs it, after collection: set here, the
# secret is in the server's environment when it starts every sandboxed process. (Not a
# DRKERNEL_ name: those must name a settings section.)
os.environ[SECRET_ENV] = secrets.token_hex(16)

# Without namespaces and a uid of their own, some candidates would reach the host for real
# (kill -1 as the test's user, a fork bomb against its process limit, daemons that survive).
needs_isolation = pytest.mark.skipif(
    not corpus.ISOLATED, reason="needs bubblewrap namespaces and root (a uid per worker slot)"
)
FAULTS = [c for c in corpus.load(HERE / "faults") if corpus.ISOLATED or not c.needs_isolation]
ESCAPE = corpus.declared(HERE / "escapes" / "escape_probe.py")
CACHE_SYMLINK = corpus.declared(HERE / "escapes" / "cache_symlink.py")
_TIMEOUT_SECONDS = {"deadlock": 5}


def processes_named(name: str) -> list[int]:
    """Pids of live processes whose command name is ``name`` (zombies excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if comm == name and state != "Z":
            found.append(int(entry.name))
    return found


class Listener:
    """Counts connections to a listening socket (TCP on loopback, or abstract unix)."""

    def __init__(self, family: int, address: object) -> None:
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind(address)
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.accepted = 0
        self._open = True
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while self._open:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        self._open = False
        self._thread.join(2)
        self.sock.close()


class Host:
    """What a candidate must not reach: a secret file (world-readable, so that only the
    sandbox keeps it away), listeners, and marker paths in /tmp and the home directory."""

    def __init__(self) -> None:
        self.secret_value = secrets.token_hex(16)
        self.secret_dir = Path(tempfile.mkdtemp(prefix="drk-host-"))
        self.secret_dir.chmod(0o755)
        self.secret_file = self.secret_dir / "secret.txt"
        self.secret_file.write_text(self.secret_value)
        self.secret_file.chmod(0o644)
        self.tcp = Listener(socket.AF_INET, ("127.0.0.1", 0))
        self.abstract_name = f"drk-test-{secrets.token_hex(6)}"
        self.unix = Listener(socket.AF_UNIX, "\0" + self.abstract_name)
        self.marker = f"drk-escape-{secrets.token_hex(6)}"
        self.marker_dirs = [Path("/tmp"), Path.home()]
        for directory in self.marker_dirs:
            (directory / f"{self.marker}.host").write_text("sentinel")

    def values(self) -> dict[str, object]:
        return {
            "secret_env": SECRET_ENV,
            "secret_file": self.secret_file,
            "secret_value": self.secret_value,
            "port": self.tcp.sock.getsockname()[1],
            "abstract": self.abstract_name,
            "marker": self.marker,
            "home": Path.home(),
        }

    def reached(self) -> list[str]:
        """What was reached, seen from outside."""
        found = [
            f"{directory / self.marker} was created"
            for directory in self.marker_dirs
            if (directory / self.marker).exists()
        ]
        found += [
            f"{listener.accepted} connection(s) to a {kind} listener"
            for kind, listener in (("TCP", self.tcp), ("unix", self.unix))
            if listener.accepted
        ]
        return found

    def close(self) -> None:
        self.tcp.close()
        self.unix.close()
        for directory in self.marker_dirs:
            for name in (self.marker, f"{self.marker}.host"):
                (directory / name).unlink(missing_ok=True)
        self.secret_file.unlink()
        self.secret_dir.rmdir()


@pytest.fixture(scope="module")
def host() -> Iterator[Host]:
    opened = Host()
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def faults(sandbox) -> dict[str, corpus.Outcome]:
    """Every fault candidate, concurrently, then nothing else: the verdicts."""
    requests = [
        c.request(source=c.render(token=TOKEN, server_pid=os.getpid()), timeout_seconds=_TIMEOUT_SECONDS.get(c.name, 0))
        for c in FAULTS
    ]
    return corpus.judge_all(sandbox.address, requests)


@pytest.mark.parametrize("candidate", FAULTS, ids=[c.name for c in FAULTS])
def test_fault_gets_a_clear_verdict(faults, candidate):
    response = faults[candidate.name]
    assert corpus.matches(candidate, response), corpus.describe(response)


def test_address_space_limit_stopped_the_runaway_allocations(faults):
    allocated = int(faults["out_of_memory"].error.split("allocation failed after ")[1].split()[0])
    assert 0 < allocated < 8  # GiB: the address-space limit (isolation.memory_bytes) binds


@needs_isolation
def test_process_limit_stopped_the_fork_bomb(faults):
    forked = int(faults["fork_bomb"].error.split("fork failed after ")[1].split()[0])
    assert 0 < forked < 512  # the process limit (isolation.max_processes) binds


def test_after_the_faults_the_server_serves_and_no_process_survives(sandbox, sandbox_stub, faults):
    # The kernel tears a killed sandbox's PID namespace down asynchronously: a fork bomb's
    # hundreds of processes take a moment to go on a loaded machine, never longer.
    deadline = time.monotonic() + 15
    while processes_named(TOKEN) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_named(TOKEN) == []
    with grpc.insecure_channel(sandbox.address) as channel:
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=30)
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    assert len(sandbox_stub.Describe(pb.DescribeRequest()).workers) == 2
    good = evaluate(sandbox_stub, "relu_task.py", "relu_triton.py")
    assert good.verdict == pb.VERDICT_CORRECT, good.error


@needs_isolation
def test_escape_probe_through_the_server_reaches_nothing(sandbox, host):
    response = corpus.judge_all(sandbox.address, [ESCAPE.request(source=ESCAPE.render(**host.values()))])[ESCAPE.name]
    assert response.verdict == pb.VERDICT_CORRECT, corpus.describe(response)
    assert host.reached() == []


@needs_isolation
@pytest.mark.heavy  # the same sandbox as through the server, which CI probes (above)
def test_escape_probe_run_locally_by_drkernel_eval_reaches_nothing(host, tmp_path):
    candidate = tmp_path / "escape_probe.py"
    candidate.write_text(ESCAPE.render(**host.values()))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "drkernel",
            "eval",
            "--task",
            str(builtin_task(ESCAPE.task).path),
            "--candidate",
            str(candidate),
            "--skip-timing",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=os.environ,
    )
    response = json.loads(result.stdout)
    assert (result.returncode, response["verdict"]) == (0, "VERDICT_CORRECT"), (
        result.stdout[-2000:] + result.stderr[-2000:]
    )
    assert host.reached() == []


def test_compile_cache_does_not_carry_host_files_between_evaluations(sandbox, host):
    source = CACHE_SYMLINK.render(**host.values())
    for attempt in range(2):  # the second evaluation of the same source gets the first one's cache
        request_id = f"{CACHE_SYMLINK.name}-{attempt}"
        response = corpus.judge_all(sandbox.address, [CACHE_SYMLINK.request(request_id=request_id, source=source)])[
            request_id
        ]
        assert response.verdict == pb.VERDICT_CORRECT, corpus.describe(response)
    cache = sandbox.scheduler.settings.work_dir / "triton-cache"
    copies = [p for p in cache.rglob("*") if p.is_file() and host.secret_value.encode() in p.read_bytes()]
    assert copies == []
