"""The profiler service's settings: the ``profiler`` section of the root configuration
(``drkernel.config``), set in YAML under ``profiler:`` or as ``DRKERNEL_PROFILER__...``.

Only pydantic and ``drkernel.sections`` are imported here, so the root configuration loads
without the profiler itself.
"""

from __future__ import annotations

from pydantic import Field

from drkernel.sections import Section, ServerSettings


class ProfilerSettings(Section):
    """The profiler service (services/profiler)."""

    server: ServerSettings = ServerSettings(port=50052, metrics_port=9102)
    sandbox_address: str = Field(
        "localhost:50051", description="host:port of the SandboxService that runs the candidates."
    )
    extra_timeout_seconds: float = Field(
        60.0, gt=0, description="Allowance on top of the evaluation's own limit when waiting for the sandbox."
    )
