"""Pieces every service's settings are built from: the strict section base, where a gRPC server
listens and how logs are written.

Each service keeps its own settings next to its code (``services/<service>/settings.py``) and
``drkernel.config`` composes them into the root; this module imports nothing but pydantic so
that any settings module can build on it without import cycles.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


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
    grace_seconds: float = Field(30.0, gt=0, description="After SIGTERM, in-flight calls get this long to finish.")
    max_message_bytes: int = Field(64 * 2**20, gt=0, description="Largest gRPC message accepted or sent.")


class LogSettings(Section):
    """Structured logs (structlog) on stderr."""

    level: Literal["debug", "info", "warning", "error"] = Field("info", description="Lowest level written.")
    format: Literal["json", "console"] = Field(
        "json", description="json for services (one object per line); console for people."
    )
