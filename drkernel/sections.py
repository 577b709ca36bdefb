"""Pieces every service's settings are built from: the strict section base, where a gRPC server
listens, how services authenticate each other and how logs are written.

Each service keeps its own settings next to its code (``services/<service>/settings.py``) and
``drkernel.config`` composes them into the root; this module imports nothing but pydantic so
that any settings module can build on it without import cycles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Section(BaseModel):
    """A settings section: frozen, and unknown keys are errors so a typo never silently keeps a
    default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerSettings(Section):
    """Where a gRPC service listens and how it stops."""

    host: str = Field("[::]", description="Address the gRPC server binds.")
    port: int = Field(50051, ge=0, le=65535, description="gRPC port; 0 picks a free one.")
    metrics_port: int = Field(9101, ge=0, le=65535, description="Prometheus /metrics port; 0 picks a free one.")
    metrics: bool = Field(True, description="Serve Prometheus metrics over HTTP.")
    health_port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description=(
            "A second, plaintext port serving only the gRPC health service (SERVING or "
            "NOT_SERVING, nothing else), for probes that speak no TLS or hold no client "
            "certificate, such as Kubernetes' grpc probes; unset: none; 0 picks a free one."
        ),
    )
    grace_seconds: float = Field(30.0, gt=0, description="After SIGTERM, in-flight calls get this long to finish.")
    max_message_bytes: int = Field(64 * 2**20, gt=0, description="Largest gRPC message accepted or sent.")
    max_connection_age_seconds: float = Field(
        300.0,
        gt=0,
        description=(
            "A client connection is asked to go away (HTTP/2 GOAWAY) after this long, so that "
            "round-robin clients re-resolve their target and spread over replicas added since."
        ),
    )
    max_connection_age_grace_seconds: float = Field(
        3600.0,
        gt=0,
        description=(
            "Calls still running on a connection that was asked to go away get this long to "
            "finish before it is closed (longer than any evaluation or weight update; a longer "
            "stream, such as WatchRun, ends UNAVAILABLE and the caller watches again)."
        ),
    )


class SecuritySettings(Section):
    """TLS and a shared bearer token between services (docs/SECURITY.md, "Between services").
    Everything is off by default (plaintext, no token): set it for any deployment beyond one
    machine. The same section serves a process's server and its clients; the files are read
    once at start, and a missing or unreadable one stops the start with one line."""

    tls_cert_file: Path | None = Field(
        None, description="The server's certificate chain (PEM). Set with tls_key_file: servers speak TLS only."
    )
    tls_key_file: Path | None = Field(None, description="The private key (PEM) of tls_cert_file.")
    tls_ca_file: Path | None = Field(
        None,
        description=(
            "CA certificates (PEM). Set: clients speak TLS and accept servers whose certificate it "
            "signed; servers with require_client_cert accept only client certificates it signed."
        ),
    )
    tls_server_name: str | None = Field(
        None,
        description=(
            "Name clients check in server certificates instead of the target's host; needed when "
            "a comma-separated address list is not all one host (certificates then name this)."
        ),
    )
    require_client_cert: bool = Field(
        False, description="Servers refuse clients without a certificate signed by tls_ca_file (mutual TLS)."
    )
    client_cert_file: Path | None = Field(
        None, description="Certificate chain (PEM) clients present for mutual TLS. Set with client_key_file."
    )
    client_key_file: Path | None = Field(None, description="The private key (PEM) of client_cert_file.")
    token_file: Path | None = Field(
        None,
        description=(
            "A file holding a shared secret. Servers refuse every call (but health checks and "
            "reflection) without the metadata 'authorization: Bearer <secret>', UNAUTHENTICATED; "
            "clients send it. Needs TLS on the side that uses it: it never crosses plaintext."
        ),
    )

    @model_validator(mode="after")
    def _pairs_complete(self) -> SecuritySettings:
        for cert, key in (("tls_cert_file", "tls_key_file"), ("client_cert_file", "client_key_file")):
            if (getattr(self, cert) is None) != (getattr(self, key) is None):
                raise ValueError(f"security.{cert} and security.{key} go together: set both or neither")
        if self.require_client_cert and (self.tls_cert_file is None or self.tls_ca_file is None):
            raise ValueError("security.require_client_cert needs security.tls_cert_file and security.tls_ca_file")
        if self.client_cert_file is not None and self.tls_ca_file is None:
            raise ValueError("security.client_cert_file needs security.tls_ca_file (client certificates ride on TLS)")
        return self


class LogSettings(Section):
    """Structured logs (structlog) on stderr."""

    level: Literal["debug", "info", "warning", "error"] = Field("info", description="Lowest level written.")
    format: Literal["json", "console"] = Field(
        "json", description="json for services (one object per line); console for people."
    )
