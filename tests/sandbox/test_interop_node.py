"""A client in another language, generated from protos/ alone, calls SandboxService."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.sandbox.conftest import DATA

ROOT = Path(__file__).resolve().parents[2]
CLIENT = Path(__file__).parent / "interop" / "evaluate_client.js"


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_javascript_client_reads_the_verdict(sandbox):
    assert (ROOT / "node_modules" / "@grpc" / "proto-loader").is_dir(), "run `make venv` (npm install)"
    result = subprocess.run(
        ["node", str(CLIENT), sandbox.address, str(DATA / "relu_task.py"), str(DATA / "relu_torch_only.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer == {"request_id": "from-node", "verdict": "VERDICT_HACKED", "checks": 1}
