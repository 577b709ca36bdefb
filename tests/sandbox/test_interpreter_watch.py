"""The per-launch watch of what Triton's CPU interpreter computes with (integrity.InterpreterWatch):
a replacement made only while forward runs is found at the launch and kept, even when put back
before forward returns; honest kernels (libdevice, dot, autotune, device function calls that
patch ``tl.core``) find nothing.

The scenarios run in one subprocess set up as the harness sets up a candidate's process on CPU
(the interpreter and its patches are process-wide).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from services.sandbox.candidate.integrity import IntegrityWatch

ROOT = Path(__file__).resolve().parents[2]

_SCRIPT = textwrap.dedent(
    """
    import json
    import numpy as np
    import torch
    import triton
    import triton.language as tl
    from services.sandbox.candidate import cpu_support, libdevice_numpy
    from services.sandbox.candidate.bounds import InterpreterMonitor
    from services.sandbox.candidate.integrity import InterpreterWatch
    from services.sandbox.candidate.kernel_code import KernelCode
    from services.sandbox.candidate.launches import LaunchRecorder

    cpu_support.install()
    code = KernelCode()
    code.install()
    monitor = InterpreterMonitor()
    monitor.install()
    LaunchRecorder(__file__, monitor.last_stored_bytes, code).install()
    watch = InterpreterWatch()
    monitor.watch_launches(watch.launch)

    from triton.language.extra import libdevice
    from triton.runtime import interpreter

    @triton.jit
    def _row_sum(x):
        return tl.sum(x, axis=0)

    @triton.jit
    def honest(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        y = tl.where(x > 0, tl.exp(x), libdevice.tanh(x))
        y = y / _row_sum(tl.abs(y))
        tl.store(y_ptr + offs, y)

    @triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"])
    @triton.jit
    def tuned_dot(a_ptr, c_ptr, n, BLOCK: tl.constexpr):
        rows = tl.arange(0, BLOCK)
        a = tl.load(a_ptr + rows[:, None] * BLOCK + rows[None, :])
        tl.store(c_ptr + rows[:, None] * BLOCK + rows[None, :], tl.dot(a, a))

    @triton.jit
    def exp_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs)))

    @triton.jit
    def sqrt_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.sqrt(tl.abs(tl.load(x_ptr + offs))))

    @triton.jit
    def log1p_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, libdevice.log1p(tl.load(x_ptr + offs)))

    x = torch.randn(16)
    y = torch.empty_like(x)

    def new_findings(run):
        before = set(watch.found())
        run()
        return sorted(set(watch.found()) - before)

    def run_honest():
        for _ in range(2):
            honest[(1,)](x, y, BLOCK=16)
            tuned_dot[(1,)](torch.randn(32 * 32), torch.empty(32 * 32), 16)

    def swapped_builder_of_the_semantic():
        semantic = interpreter.interpreter_semantic
        real = semantic.builder
        semantic.builder = type("Stand", (), {"__getattr__": lambda self, name: getattr(real, name)})()
        try:
            exp_kernel[(1,)](x, y, BLOCK=16)
        finally:
            semantic.builder = real

    def swapped_libdevice_table():
        real = libdevice_numpy.IMPLEMENTATIONS
        libdevice_numpy.IMPLEMENTATIONS = {**real}
        try:
            honest[(1,)](x, y, BLOCK=16)
        finally:
            libdevice_numpy.IMPLEMENTATIONS = real

    def swapped_libdevice_function():
        real = libdevice.log1p
        libdevice.log1p = lambda value, **_: value
        try:
            log1p_kernel[(1,)](x, y, BLOCK=16)
        finally:
            libdevice.log1p = real

    def swapped_by_the_grid_function_until_the_last_program():
        real = interpreter.InterpreterBuilder.__dict__["create_sqrt"]
        programs = 4
        calls = []

        def stand_in(self, arg):
            calls.append(1)
            if len(calls) == programs:  # the last program puts the original back
                interpreter.InterpreterBuilder.create_sqrt = real
            return real(self, arg)

        def grid(meta):
            interpreter.InterpreterBuilder.create_sqrt = stand_in
            return (programs,)

        sqrt_kernel[grid](x, y, BLOCK=16)

    def swapped_interpreter_method():
        real = interpreter.InterpreterBuilder.__dict__["create_exp"]
        interpreter.InterpreterBuilder.create_exp = lambda self, arg: arg
        try:
            exp_kernel[(1,)](x, y, BLOCK=16)
        finally:
            interpreter.InterpreterBuilder.create_exp = real

    try:
        libdevice_numpy.IMPLEMENTATIONS["tanh"] = np.sinh
        writable = True
    except TypeError:
        writable = False
    result = {
        "honest": new_findings(run_honest),
        "table_writable": writable,
        "semantic_builder": new_findings(swapped_builder_of_the_semantic),
        "libdevice_table": new_findings(swapped_libdevice_table),
        "libdevice_function": new_findings(swapped_libdevice_function),
        "interpreter_method": new_findings(swapped_interpreter_method),
        "grid_function": new_findings(swapped_by_the_grid_function_until_the_last_program),
        "honest_after": new_findings(run_honest),
        "kept": len(watch.found()),
    }
    print(json.dumps(result))
    """
)


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> dict:
    script = tmp_path_factory.mktemp("watch") / "scenarios.py"  # kernels need a file for their source
    script.write_text(_SCRIPT)
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_honest_kernels_find_nothing(findings: dict) -> None:
    # tl.exp, tl.where, libdevice.tanh, tl.sum in a device function (it patches tl.core, which
    # Triton never restores), tl.dot under autotune: twice each, so the second launch sees the first's
    assert findings["honest"] == []
    assert findings["honest_after"] == []


def test_the_libdevice_table_is_read_only(findings: dict) -> None:
    assert findings["table_writable"] is False


@pytest.mark.parametrize(
    ("scenario", "name"),
    [
        ("semantic_builder", "triton.runtime.interpreter.interpreter_semantic.builder"),
        ("libdevice_table", "services.sandbox.candidate.libdevice_numpy.IMPLEMENTATIONS"),
        ("libdevice_function", "triton.language.extra.libdevice.log1p"),
        ("interpreter_method", "triton.runtime.interpreter.InterpreterBuilder.create_exp"),
        # swapped by the grid function, put back by the last program: seen once the grid is set
        ("grid_function", "triton.runtime.interpreter.InterpreterBuilder.create_sqrt"),
    ],
)
def test_a_replacement_made_only_around_a_launch_is_found_there(findings: dict, scenario: str, name: str) -> None:
    # each was put back before the scenario returned, as a candidate's forward would
    assert findings[scenario] == [f"{name} (at a kernel launch)"]


def test_what_was_found_is_kept_after_it_was_put_back(findings: dict) -> None:
    assert findings["kept"] == 5


def test_the_integrity_watch_reports_what_was_found_at_launches() -> None:
    found = ["triton.language.exp (at a kernel launch)"]
    assert IntegrityWatch(found=lambda: found).changed() == found
