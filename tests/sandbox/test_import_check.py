"""The second import without Triton's interpreter (services/sandbox/candidate/import_check.py),
in a process set up like a candidate's: the interpreter on, a child forked per check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_DRIVER = """
import json, sys
from pathlib import Path
from services.sandbox.candidate import cpu_support
from services.sandbox.candidate.import_check import ImportCheck

cpu_support.install()
reports = {}
for path in sys.argv[1:]:
    check = ImportCheck.start(Path(path), [], lambda error: type(error).__name__ + ": " + str(error))
    reports[Path(path).stem] = check.result(timeout_seconds=120)
print(json.dumps(reports))
"""

_MODULES = {
    # kernels launched at import time run (through the interpreter) as they would on a GPU
    "launches_at_import": """
        import torch, triton, triton.language as tl

        @triton.jit
        def fill(t_ptr, BLOCK: tl.constexpr):
            tl.store(t_ptr + tl.arange(0, BLOCK), tl.zeros([BLOCK], dtype=tl.float32) + 1.0)

        TABLE = torch.zeros(16)
        fill[(1,)](TABLE, BLOCK=16)
        assert TABLE.sum() == 16
    """,
    "needs_the_knob": """
        import triton
        if not triton.knobs.runtime.interpret:
            raise ImportError("interpreter only")
    """,
    "needs_the_variable": """
        import os
        if os.environ.get("TRITON_INTERPRET") != "1":
            raise ImportError("interpreter only")
    """,
    "ends_the_process": """
        import os
        os._exit(0)
    """,
}


@pytest.mark.slow
def test_a_module_must_import_without_the_interpreter(tmp_path):
    paths = []
    for name, source in _MODULES.items():
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        paths.append(str(path))
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, *paths], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr[-4000:]
    reports = json.loads(done.stdout.strip().splitlines()[-1])
    assert reports["launches_at_import"] == ""
    assert reports["needs_the_knob"] == reports["needs_the_variable"] == "ImportError: interpreter only"
    assert reports["ends_the_process"] == "importing it without the interpreter ended the process"
