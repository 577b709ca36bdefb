"""TLS, mutual TLS and the bearer token on real servers over loopback (the trainer service: it
starts no process until asked), address lists spread round-robin, connections recycled after
their maximum age, and settings files that cannot be used stopping a start with one line."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import prometheus_client
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pydantic import ValidationError

from drkernel.channels import channel_options, open_channel, parse_target
from drkernel.cli import EXIT_USAGE, main
from drkernel.credentials import bearer_token, channel_credentials, server_credentials
from drkernel.errors import InvalidArgument
from drkernel.sections import SecuritySettings, ServerSettings
from drkernel.v1 import trainer_pb2 as pb
from drkernel.v1 import trainer_pb2_grpc
from services.trainer.runs import STATE_FILE
from services.trainer.server import RunningTrainer, start_trainer
from services.trainer.servicer import SERVICE_NAME
from services.trainer.settings import TrainerSettings
from tests.certificates import Certificates
from tests.conftest import BackgroundLoop

TIMEOUT = 10
LIST_RUNS = "/drkernel.v1.TrainerService/ListRuns"


def runs_dir_with(base: Path, run_id: str) -> Path:
    """A runs_dir holding one finished run, so that a ListRuns answer tells which server gave it."""
    run = base / run_id / run_id
    run.mkdir(parents=True)
    (run / STATE_FILE).write_text(json.dumps({"name": run_id, "state": "succeeded", "steps_total": 1}))
    return run.parent


@contextmanager
def trainer(
    loop: BackgroundLoop, runs_dir: Path, security: SecuritySettings, **server: Any
) -> Iterator[RunningTrainer]:
    settings = TrainerSettings(
        server=ServerSettings(host="127.0.0.1", port=0, metrics=False, **server), runs_dir=runs_dir
    )
    running = loop.run(start_trainer(settings, security))
    try:
        yield running
    finally:
        loop.run(running.stop())


def list_runs(channel: grpc.Channel) -> list[str]:
    response = trainer_pb2_grpc.TrainerServiceStub(channel).ListRuns(pb.ListRunsRequest(), timeout=TIMEOUT)
    return [run.run_id for run in response.runs]


def one_shot(address: str, security: SecuritySettings) -> grpc.Channel:
    """A channel without retries, for calls expected to fail at once."""
    credentials = channel_credentials(security)
    assert credentials is not None
    return grpc.secure_channel(address, credentials)


@pytest.fixture(scope="module")
def secured(
    background_loop: BackgroundLoop, certificates: Certificates, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningTrainer]:
    """A server with TLS and the token."""
    with trainer(
        background_loop, runs_dir_with(tmp_path_factory.mktemp("runs"), "first"), certificates.security()
    ) as r:
        yield r


def test_tls_with_the_token_gets_through_by_address_and_by_name(
    secured: RunningTrainer, certificates: Certificates
) -> None:
    for address in (secured.address, f"dns:///localhost:{secured.server.port}"):
        with open_channel(address, SERVICE_NAME, certificates.security()) as channel:
            assert list_runs(channel) == ["first"]


def test_a_plaintext_client_and_a_client_trusting_another_authority_are_refused(
    secured: RunningTrainer, certificates: Certificates
) -> None:
    untrusting = certificates.security().model_copy(update={"tls_ca_file": certificates.other_ca})
    for channel in (grpc.insecure_channel(secured.address), one_shot(secured.address, untrusting)):
        with channel, pytest.raises(grpc.RpcError) as caught:
            list_runs(channel)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE


def _refused() -> float:
    return (
        prometheus_client.REGISTRY.get_sample_value(
            "drkernel_rpc_total", {"method": LIST_RUNS, "code": "UNAUTHENTICATED"}
        )
        or 0.0
    )


@pytest.mark.parametrize(
    ("token", "message"),
    [(None, "this server requires a bearer token"), ("not-the-token", "the bearer token is not this server's")],
    ids=["missing", "wrong"],
)
def test_calls_without_the_right_token_are_unauthenticated(
    secured: RunningTrainer, certificates: Certificates, tmp_path: Path, token: str | None, message: str
) -> None:
    security = certificates.security(token=False)
    if token is not None:
        (tmp_path / "token").write_text(token)
        security = security.model_copy(update={"token_file": tmp_path / "token"})
    before = _refused()
    with open_channel(secured.address, SERVICE_NAME, security) as channel:
        with pytest.raises(grpc.RpcError) as caught:
            list_runs(channel)
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert message in caught.value.details()
        assert _refused() == before + 1
        watch = trainer_pb2_grpc.TrainerServiceStub(channel).WatchRun(pb.WatchRunRequest(run_id="first"))
        with pytest.raises(grpc.RpcError) as caught:
            list(watch)  # a streaming method is refused the same way
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_health_checks_need_no_token(secured: RunningTrainer, certificates: Certificates) -> None:
    with open_channel(secured.address, "grpc.health.v1.Health", certificates.security(token=False)) as channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=TIMEOUT
        )
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


def test_the_health_port_answers_plaintext_probes_and_nothing_else(
    background_loop: BackgroundLoop, certificates: Certificates, tmp_path: Path
) -> None:
    runs_dir, security = runs_dir_with(tmp_path, "probed"), certificates.security(mutual=True)
    with (
        trainer(background_loop, runs_dir, security, health_port=0) as running,
        grpc.insecure_channel(f"127.0.0.1:{running.server.health_port}") as probe,
    ):
        answer = health_pb2_grpc.HealthStub(probe).Check(health_pb2.HealthCheckRequest(), timeout=TIMEOUT)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as caught:
            list_runs(probe)
        assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_mutual_tls_refuses_clients_without_a_certificate(
    background_loop: BackgroundLoop, certificates: Certificates, tmp_path: Path
) -> None:
    with trainer(background_loop, runs_dir_with(tmp_path, "mutual"), certificates.security(mutual=True)) as running:
        with one_shot(running.address, certificates.security()) as channel, pytest.raises(grpc.RpcError) as caught:
            list_runs(channel)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        with open_channel(running.address, SERVICE_NAME, certificates.security(client_cert=True)) as channel:
            assert list_runs(channel) == ["mutual"]


def test_an_address_list_spreads_calls_over_every_server(
    background_loop: BackgroundLoop, secured: RunningTrainer, certificates: Certificates, tmp_path: Path
) -> None:
    with (
        trainer(background_loop, runs_dir_with(tmp_path, "second"), certificates.security()) as second,
        open_channel(f"{secured.address}, {second.address}", SERVICE_NAME, certificates.security()) as channel,
    ):
        grpc.channel_ready_future(channel).result(timeout=TIMEOUT)
        answers = [tuple(list_runs(channel)) for _ in range(6)]
    assert set(answers) == {("first",), ("second",)}


def test_connections_are_recycled_after_their_maximum_age(background_loop: BackgroundLoop, tmp_path: Path) -> None:
    """The server asks the client to go away (GOAWAY) once the connection is old, and the
    channel connects again (resolving its target again, so new replicas are found)."""
    reconnected = threading.Event()
    with (
        trainer(
            background_loop, runs_dir_with(tmp_path, "aged"), SecuritySettings(), max_connection_age_seconds=0.3
        ) as running,
        open_channel(running.address, SERVICE_NAME, SecuritySettings()) as channel,
    ):
        assert list_runs(channel) == ["aged"]
        channel.subscribe(lambda state: state == grpc.ChannelConnectivity.CONNECTING and reconnected.set())
        assert reconnected.wait(TIMEOUT), "the server never closed the aged connection"
        assert list_runs(channel) == ["aged"]


def test_targets() -> None:
    assert parse_target("sandbox:50051").uri == "sandbox:50051"
    assert parse_target("dns:///sandbox-headless:50051").uri == "dns:///sandbox-headless:50051"
    listed = parse_target("10.0.0.1:50051, 10.0.0.2:50051")
    assert (listed.uri, listed.is_list, listed.tls_host) == ("ipv4:10.0.0.1:50051,10.0.0.2:50051", True, None)
    assert parse_target("[::1]:1,[::1]:2").uri == "ipv6:[::1]:1,[::1]:2"
    assert parse_target("127.0.0.1:1,127.0.0.1:2").tls_host == "127.0.0.1"
    for address, message in [
        ("sandbox-0:1,sandbox-1:1", "for a host name give dns:///sandbox-0:1"),
        ("10.0.0.1:1,[::1]:1", "mixes IPv4 and IPv6"),
        ("10.0.0.1:1,10.0.0.2", "'10.0.0.2' is not HOST:PORT"),
    ]:
        with pytest.raises(InvalidArgument, match=message):
            parse_target(address)


def test_a_list_of_several_hosts_over_tls_needs_the_servers_name(certificates: Certificates) -> None:
    with pytest.raises(InvalidArgument, match=r"set security\.tls_server_name"):
        channel_options("10.0.0.1:1,10.0.0.2:1", SERVICE_NAME, certificates.security())
    named = certificates.security().model_copy(update={"tls_server_name": "sandbox.drkernel.svc"})
    _, options = channel_options("10.0.0.1:1,10.0.0.2:1", SERVICE_NAME, named)
    assert ("grpc.ssl_target_name_override", "sandbox.drkernel.svc") in options


def test_unusable_files_and_settings_are_named(certificates: Certificates, tmp_path: Path) -> None:
    missing, not_pem, spaced = tmp_path / "missing.pem", tmp_path / "not.pem", tmp_path / "spaced"
    not_pem.write_text("hello\n")
    spaced.write_text("two words\n")
    base = certificates.security(token=False)

    def server(**update: Any) -> object:
        return server_credentials(base.model_copy(update=update))

    cases = [
        (lambda: server(tls_cert_file=missing), "security.tls_cert_file: cannot read"),
        (lambda: server(tls_key_file=not_pem), f"security.tls_key_file: {not_pem} holds no PEM"),
        (lambda: bearer_token(base.model_copy(update={"token_file": spaced})), "printable ASCII characters, no spaces"),
        (lambda: server_credentials(SecuritySettings(token_file=certificates.token)), "needs security.tls_cert_file"),
        (lambda: channel_credentials(SecuritySettings(token_file=certificates.token)), "needs security.tls_ca_file"),
    ]
    for build, message in cases:
        with pytest.raises(InvalidArgument, match=re.escape(message)):
            build()
    with pytest.raises(ValidationError, match=r"tls_cert_file and security\.tls_key_file go together"):
        SecuritySettings(tls_cert_file=certificates.server_cert)
    with pytest.raises(ValidationError, match="require_client_cert needs"):
        SecuritySettings(require_client_cert=True)


def test_a_server_with_a_missing_certificate_stops_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], certificates: Certificates, tmp_path: Path
) -> None:
    monkeypatch.setenv("DRKERNEL_SECURITY__TLS_CERT_FILE", str(tmp_path / "gone.pem"))
    monkeypatch.setenv("DRKERNEL_SECURITY__TLS_KEY_FILE", str(certificates.server_key))
    assert main(["serve", "trainer", "--port", "0"]) == EXIT_USAGE
    error = capsys.readouterr().err
    assert (
        error == f"drkernel: security.tls_cert_file: cannot read {tmp_path / 'gone.pem'}: No such file or directory\n"
    )
