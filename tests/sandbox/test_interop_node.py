"""A client in another language, generated from protos/ alone, calls SandboxService: in
plaintext, and over TLS with the bearer token read from the same settings variables the Python
services use."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from services.sandbox.server.servicer import RunningSandbox
from tests.certificates import Certificates
from tests.sandbox.conftest import DATA

ROOT = Path(__file__).resolve().parents[2]
CLIENT = Path(__file__).parent / "interop" / "evaluate_client.js"
HACKED = {"request_id": "from-node", "verdict": "VERDICT_HACKED", "checks": 1}

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")


def evaluate(address: str, **security: Path) -> subprocess.CompletedProcess[str]:
    """Runs the Node client with DRKERNEL_SECURITY__<NAME> set from ``security``."""
    assert (ROOT / "node_modules" / "@grpc" / "proto-loader").is_dir(), "run `make venv` (npm install)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRKERNEL_SECURITY__")}
    env.update({f"DRKERNEL_SECURITY__{name.upper()}": str(value) for name, value in security.items()})
    return subprocess.run(
        ["node", str(CLIENT), address, str(DATA / "relu_task.py"), str(DATA / "relu_torch_only.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_javascript_client_reads_the_verdict(sandbox: RunningSandbox) -> None:
    result = evaluate(sandbox.address)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == HACKED


@pytest.mark.slow
def test_javascript_client_speaks_tls_with_the_token(
    secure_sandboxes: list[RunningSandbox], certificates: Certificates
) -> None:
    address = secure_sandboxes[0].address
    without_token = evaluate(address, tls_ca_file=certificates.ca)
    assert without_token.returncode == 1
    last_line = without_token.stderr.strip().splitlines()[-1]  # after Node's warning about SNI and IP addresses
    assert last_line.startswith("UNAUTHENTICATED: this server requires a bearer token")
    result = evaluate(address, tls_ca_file=certificates.ca, token_file=certificates.token)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == HACKED
