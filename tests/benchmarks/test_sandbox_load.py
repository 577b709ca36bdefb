"""The scale-out load benchmark (benchmarks/sandbox_load.py), small: one round-robin channel over
two sandbox servers that require TLS and the token spreads its evaluations over both (each
server's own count, from Describe), and every answer is right."""

from __future__ import annotations

import pytest

from benchmarks import sandbox_load
from services.sandbox.server.servicer import RunningSandbox
from tests.certificates import Certificates


@pytest.mark.slow
def test_one_client_spreads_evaluations_over_both_servers(
    secure_sandboxes: list[RunningSandbox], certificates: Certificates
) -> None:
    addresses = [sandbox.address for sandbox in secure_sandboxes]
    security = certificates.security()
    before = sandbox_load.served(addresses, security)
    records, _ = sandbox_load.run_clients(
        ",".join(addresses), security, clients=2, requests=2, cycle=sandbox_load.parse_mix("syntax=1")
    )
    ran = [after - earlier for earlier, after in zip(before, sandbox_load.served(addresses, security), strict=True)]
    assert sandbox_load.summary(records, 1.0)["wrong"] == 0 and all("verdict" in r for r in records)
    assert sum(ran) == 4 and min(ran) >= 1, ran
