"""Honest Triton patterns that must run under the CPU interpreter and compile for sm_90 there:
compile-request types (tuples, tensor descriptors), the compile check built from the launched
functions themselves (helpers, closures, a module that registers a torch.library op),
autotune's config choice, bfloat16 arithmetic, and libdevice's NumPy equivalents.

Scenarios that need the candidate process's patches run in a subprocess set up as the harness
sets up a candidate's process (the patches are process-wide); the rest run here.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from services.sandbox.candidate import libdevice_numpy
from services.sandbox.candidate.bounds import _ranges
from services.sandbox.candidate.launches import compile_request

ROOT = Path(__file__).resolve().parents[2]

# Runs in the subprocess: the candidate-process setup of harness.Harness (on CPU), then the
# scenario's check(), then the compile check of everything the interpreter launched.
_DRIVER = """
import importlib.util, json, sys
from services.sandbox.candidate import cpu_support
from services.sandbox.candidate.bounds import InterpreterMonitor
from services.sandbox.candidate.gpu_compile import LanguageSnapshot, compile_requests
from services.sandbox.candidate.kernel_code import KernelCode
from services.sandbox.candidate.launches import LaunchRecorder

path = sys.argv[1]
language = LanguageSnapshot()
cpu_support.install()
code = KernelCode()
code.install()
monitor = InterpreterMonitor()
monitor.install()
recorder = LaunchRecorder(path, monitor.last_stored_bytes, code)
recorder.install()
spec = importlib.util.spec_from_file_location("candidate", path)
module = importlib.util.module_from_spec(spec)
sys.modules["candidate"] = module
spec.loader.exec_module(module)
result = {"check": module.check(), "findings": code.take_findings()}
compiled = compile_requests(recorder.compile_requests(), language, code)
result["compiled"] = [k.model_dump() for k in compiled]
result["after"] = module.after() if hasattr(module, "after") else None
print(json.dumps(result))
"""

_PRELUDE = """
import sys
import torch
import triton
import triton.language as tl
"""


def _interpreted(script: str, *args: str, timeout: int, cwd: Path | None = None) -> str:
    """The last line ``script`` prints, run in a fresh interpreter-mode Python process."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout.strip().splitlines()[-1]


def _run(tmp_path: Path, source: str) -> dict:
    path = tmp_path / "candidate.py"
    path.write_text(_PRELUDE + textwrap.dedent(source))
    return json.loads(_interpreted(_DRIVER, str(path), timeout=300, cwd=tmp_path))


# Compile requests and bounds ------------------------------------------------------------


def _kernel(ptrs, sizes, desc, flag, scale, big, maybe, BLOCK):
    """Only its signature matters here."""


def test_compile_request_types_follow_triton_for_tuples_descriptors_and_scalars():
    x, y = torch.zeros(64), torch.zeros(64, dtype=torch.float16)
    desc = TensorDescriptor.from_tensor(torch.zeros(32, 32), [16, 16])
    request = compile_request(
        _kernel, ["BLOCK"], ((x, (y, 7)), (3,), desc, True, 0.5, 2**40, None), {"BLOCK": 128, "num_warps": 2}
    )
    assert request.signature == {
        "ptrs": ("*fp32", ("*fp16", "i32")),
        "sizes": ("i32",),
        "desc": "tensordesc<fp32[16, 16]>",
        "flag": "u1",
        "scale": "fp32",
        "big": "i64",
        "maybe": "constexpr",
        "BLOCK": "constexpr",
    }
    assert request.constexprs == {(6,): None, (7,): 128}
    assert request.options == {"num_warps": 2}
    assert request.describe().startswith(
        "_kernel(ptrs: (*fp32, (*fp16, i32)), sizes: (i32), desc: tensordesc<fp32[16, 16]>"
    )


def test_constexpr_inside_a_tuple_is_keyed_by_its_path():
    request = compile_request(_kernel, ["BLOCK"], ((torch.zeros(4), None), (1,), None, 1, 1.0, 1, 1), {"BLOCK": 8})
    assert request.signature["ptrs"] == ("*fp32", "constexpr")
    assert request.constexprs[(0, 1)] is None


def test_bounds_ranges_cover_tensors_in_tuples_and_descriptor_bases():
    a, b, base = torch.zeros(8), torch.zeros(4), torch.zeros(16, 16)
    ranges = _ranges([("ptrs", (a, (b, 3))), ("desc", TensorDescriptor.from_tensor(base, [8, 8])), ("n", 5)])
    assert [name for name, _, _ in ranges] == ["ptrs[0]", "ptrs[1][0]", "desc.base"]
    assert ranges[2][2] - ranges[2][1] == base.untyped_storage().nbytes()


_BUILDER_METHODS = ("create_masked_load", "create_masked_store", "create_atomic_cas", "create_atomic_rmw", "create_dot")
# The interpreter's memory and dot methods replaced by recorders taking anything, then the
# bounds monitor installed over them and each called as another Triton version might.
_PASS_THROUGH = f"""
import json
from triton.runtime import interpreter
builder = interpreter.interpreter_builder
seen = {{}}
def recording(name):
    def method(*args, **kwargs):
        seen[name] = [len(args), sorted(kwargs)]
    return method
for name in {_BUILDER_METHODS!r}:
    setattr(builder, name, recording(name))
from services.sandbox.candidate.bounds import InterpreterMonitor
InterpreterMonitor().install()
for name in {_BUILDER_METHODS!r}:
    getattr(builder, name)(*range(7), policy="evict_last")
print(json.dumps(seen))
"""


def test_bounds_monitor_passes_on_every_argument_the_interpreter_gives():
    """Triton 3.6's interpreter gives a masked load six arguments, 3.9's five: a monitor
    written for one made every kernel with a load a RUNTIME_ERROR under the other."""
    seen = json.loads(_interpreted(_PASS_THROUGH, timeout=120))
    assert seen == {name: [7, ["policy"]] for name in _BUILDER_METHODS}


_LOOP_KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def row_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):  # bounded by a kernel argument: its __index__
        offsets = start + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.store(out_ptr, tl.sum(total))


def check():
    x, out = torch.arange(100, dtype=torch.float32), torch.zeros(1)
    row_sum[(1,)](x, out, 100, BLOCK=32)
    return out.item()
"""
# Triton 3.6's scalar index (int() of a one-element array, which NumPy 2.4+ refuses) put back
# under the CPU support, then a kernel whose loop is bounded by an argument run through it.
_OLD_INDEX = """
import importlib.util, sys
from triton.runtime import interpreter
newer = interpreter._patch_lang_tensor
def as_in_triton_3_6(tensor, scope):
    newer(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))
interpreter._patch_lang_tensor = as_in_triton_3_6
from services.sandbox.candidate import cpu_support
cpu_support.install()
spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(module.check())
"""


def test_loops_bounded_by_an_argument_run_under_older_tritons_with_newer_numpy(tmp_path):
    """The GPU image's Triton 3.6 with NumPy 2.5 failed every such loop on CPU (a
    reduction, a softmax, a norm: honest kernels judged RUNTIME_ERROR)."""
    path = tmp_path / "candidate.py"
    path.write_text(_LOOP_KERNEL)
    assert float(_interpreted(_OLD_INDEX, str(path), timeout=120)) == sum(range(100))


# Compile check from the launched functions ----------------------------------------------

HELPER_AND_CLOSURE = """
@triton.jit
def _square(x):
    return x * x


def make(block):
    BLOCK = tl.constexpr(block)

    @triton.jit
    def _shift(x):
        return _square(x) + 1.0

    @triton.jit
    def closure_kernel(x_ptr, y_ptr, n):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, _shift(tl.load(x_ptr + offs, mask=mask)), mask=mask)

    return closure_kernel


@triton.jit
def module_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, _square(tl.load(x_ptr + offs, mask=mask)), mask=mask)


def language_patches(launch):  # how often the interpreter patched part of the language
    from triton.runtime import interpreter

    patch, calls = interpreter._patch_builtin, []
    interpreter._patch_builtin = lambda *args: calls.append(args) or patch(*args)
    try:
        launch()
    finally:
        interpreter._patch_builtin = patch
    return len(calls)


def check():
    x = torch.arange(100, dtype=torch.float32)
    y, z, w = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
    module_kernel[(4,)](x, y, 100, BLOCK=32)
    make(64)[(2,)](x, z, 100)
    one_program = language_patches(lambda: module_kernel[(1,)](x, w, 100, BLOCK=32))
    four_programs = language_patches(lambda: module_kernel[(4,)](x, w, 100, BLOCK=32))
    return [torch.equal(y, x * x), torch.equal(z, x * x + 1), torch.equal(w, x * x), one_program == four_programs]
"""


@pytest.mark.slow
def test_kernels_calling_helpers_and_defined_in_closures_run_and_compile(tmp_path):
    """A helper's calls inside a launch's programs do not patch the language again: Triton
    re-patches at every device call, where the launch has patched it already."""
    result = _run(tmp_path, HELPER_AND_CLOSURE)
    assert result["check"] == [True, True, True, True]
    compiled = {k["name"]: k for k in result["compiled"]}
    assert set(compiled) == {"module_kernel", "closure_kernel"}
    assert all(k["ok"] for k in compiled.values()), compiled
    assert (
        compiled["module_kernel"]["message"]
        == "compiled module_kernel(x_ptr: *fp32, y_ptr: *fp32, n: i32, BLOCK=32) for sm_90"
    )


BREAK_IN_CLOSURE = """
def make():
    @triton.jit
    def broken_kernel(x_ptr, n, BLOCK: tl.constexpr):
        for step in range(4):
            if step == 1:
                break
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    return broken_kernel


def check():
    make()[(1,)](torch.zeros(8), 8, BLOCK=8)
    return True
"""


@pytest.mark.slow
def test_a_kernel_in_a_closure_that_the_gpu_compiler_rejects_is_a_compile_failure(tmp_path):
    result = _run(tmp_path, BREAK_IN_CLOSURE)
    [kernel] = result["compiled"]
    assert kernel["name"] == "broken_kernel" and not kernel["ok"]
    assert "break" in kernel["message"].lower()


TORCH_LIBRARY_OP = """
from torch.library import triton_op, wrap_triton

sys.candidate_imports = getattr(sys, "candidate_imports", 0) + 1


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


@triton_op("cpu_patterns_test::relu", mutates_args={})
def relu(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    wrap_triton(relu_kernel)[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
    return y


X = torch.randn(100)


def check():
    return torch.equal(relu(X), X.clamp(min=0))


def after():
    # Still interpreted after the compile check ("0 active drivers" if it went to a compiled kernel).
    return [torch.equal(relu(X), X.clamp(min=0)), sys.candidate_imports]
"""


@pytest.mark.slow
def test_the_compile_check_never_runs_the_module_again(tmp_path):
    result = _run(tmp_path, TORCH_LIBRARY_OP)
    assert result["check"] is True
    assert [k["ok"] for k in result["compiled"]] == [True]
    assert result["after"] == [True, 1]


# Autotune ------------------------------------------------------------------------------

AUTOTUNE = """
def _drop_first(configs, named_args, **kwargs):
    return configs[1:]


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16}, num_warps=1), triton.Config({"BLOCK": 32}, num_warps=2),
             triton.Config({"BLOCK": 64}, num_warps=4)],
    key=["n"], prune_configs_by={"early_config_prune": _drop_first},
)
@triton.jit
def pruned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@triton.autotune(
    configs=[triton.Config({"BLOCK": 8}, num_warps=1), triton.Config({"BLOCK": 128}, num_warps=8)], key=["n"]
)
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def tuned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def check():
    x = torch.arange(100, dtype=torch.float32)
    y, z = torch.empty_like(x), torch.empty_like(x)
    pruned_kernel[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, y, 100)
    tuned_kernel[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, z, 100)
    return [
        torch.equal(y, 2 * x), torch.equal(z, x + 1), pruned_kernel.best_config.kwargs, tuned_kernel.best_config.kwargs
    ]
"""


@pytest.mark.slow
def test_autotune_runs_the_first_config_left_after_pruning_and_compiles_it(tmp_path):
    result = _run(tmp_path, AUTOTUNE)
    assert result["check"] == [True, True, {"BLOCK": 32}, {"BLOCK": 8}]
    messages = {k["name"]: k["message"] for k in result["compiled"] if k["ok"]}
    assert "BLOCK=32" in messages["pruned_kernel"] and "num_warps=2" in messages["pruned_kernel"]
    assert "BLOCK=8" in messages["tuned_kernel"] and "EVEN=False" in messages["tuned_kernel"]


# Tuples and tensor descriptors in the interpreter -------------------------------------

TUPLES_AND_DESCRIPTORS = """
from triton.tools.tensor_descriptor import TensorDescriptor
from services.sandbox.candidate.bounds import OutOfBoundsAccess


@triton.jit
def tuple_kernel(ptrs, n, BLOCK: tl.constexpr):
    x_ptr, (y_ptr, scale) = ptrs
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * scale, mask=offs < n)


@triton.jit
def descriptor_kernel(x_desc, y_desc, BLOCK: tl.constexpr):
    offset = tl.program_id(0) * BLOCK
    y_desc.store([offset], x_desc.load([offset]) + 1.0)


def check():
    x = torch.arange(64, dtype=torch.float32)
    y, z = torch.empty_like(x), torch.empty_like(x)
    tuple_kernel[(1,)]((x, (y, 3.0)), 64, BLOCK=64)
    descriptor_kernel[(4,)](TensorDescriptor.from_tensor(x, [16]), TensorDescriptor.from_tensor(z, [16]), BLOCK=16)
    try:
        tuple_kernel[(1,)]((x, (y, 1.0)), 128, BLOCK=128)
        caught = ""
    except Exception as error:
        caught = repr(error)
    return [torch.equal(y, 3 * x), torch.equal(z, x + 1), caught]
"""


@pytest.mark.slow
def test_tuple_and_descriptor_kernels_run_are_bounds_checked_and_compile(tmp_path):
    result = _run(tmp_path, TUPLES_AND_DESCRIPTORS)
    same_tuple, same_descriptor, caught = result["check"]
    assert same_tuple and same_descriptor
    assert "out-of-bounds" in caught and "ptrs[" in caught
    compiled = {(k["name"], k["ok"]) for k in result["compiled"]}
    assert compiled == {("tuple_kernel", True), ("descriptor_kernel", True)}, result["compiled"]


# bfloat16 in the interpreter --------------------------------------------------------------

BFLOAT16 = """
@triton.jit
def bf16_kernel(x_ptr, y_ptr, a_ptr, b_ptr, out_ptr, red_ptr, idx_ptr, dot_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.where(x > y, x * y + 1.0, tl.abs(x) - y / 3.0), mask=mask)
    tl.store(out_ptr + n + offs, tl.cumsum(x, axis=0), mask=mask)
    tl.store(out_ptr + 2 * n + offs, (x * 10).to(tl.int32).to(tl.bfloat16), mask=mask)
    tl.store(red_ptr, tl.sum(x, axis=0))
    tl.store(red_ptr + 1, tl.max(tl.where(mask, x, float("-inf")), axis=0))
    tl.store(idx_ptr, tl.argmin(tl.where(mask, x, float("inf")), axis=0))
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
    tl.store(dot_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b))


def check():
    torch.manual_seed(0)
    bf16 = torch.bfloat16
    x, y = torch.randn(50, dtype=bf16), torch.randn(50, dtype=bf16)
    a, b = torch.randn(16, 16, dtype=bf16), torch.randn(16, 16, dtype=bf16)
    out, red = torch.empty(150, dtype=bf16), torch.empty(2, dtype=bf16)
    idx, dot = torch.empty(1, dtype=torch.int32), torch.empty(16, 16)
    bf16_kernel[(1,)](x, y, a, b, out, red, idx, dot, 50, BLOCK=64)
    # Triton divides bfloat16 by a float constant in float32 (its promotion rule), then rounds once
    elementwise = torch.where(x > y, x * y + 1.0, (x.float().abs() - y.float() / 3.0).to(bf16))
    return [
        torch.equal(out[:50], elementwise),
        (out[50:100].float() - x.float().cumsum(0)).abs().max().item(),
        torch.equal(out[100:], (x * 10).to(torch.int32).to(bf16)),
        abs(red[0].item() - x.float().sum().item()),
        red[1].item() == x.max().item() and idx.item() == x.argmin().item(),
        (dot - a.float() @ b.float()).abs().max().item(),
    ]
"""


@pytest.mark.slow
def test_bfloat16_kernels_compute_values_in_the_interpreter_as_on_a_gpu(tmp_path):
    """The interpreter holds bfloat16 as uint16 bits; its arithmetic, comparisons, reductions,
    scans, dots and casts must work on the values (float32, one rounding), not on the bits."""
    elementwise, scan_error, casts, sum_error, extrema, dot_error = _run(tmp_path, BFLOAT16)["check"]
    assert elementwise and casts and extrema
    assert scan_error < 0.05 and sum_error < 0.05 and dot_error < 1e-5


# libdevice -----------------------------------------------------------------------------

LIBDEVICE = """
from triton.language.extra import libdevice
from triton.language.extra.cuda.libdevice import pow as cuda_pow


@triton.jit
def libdevice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, libdevice.tanh(x), mask=mask)
    tl.store(out_ptr + n + offs, tl.extra.cuda.libdevice.erf(x), mask=mask)
    tl.store(out_ptr + 2 * n + offs, cuda_pow(tl.abs(x), 1.5), mask=mask)
    tl.store(out_ptr + 3 * n + offs, libdevice.rsqrt(tl.abs(x) + 1.0), mask=mask)


def check():
    x = torch.linspace(-3, 3, 50)
    out = torch.empty(4, 50)
    libdevice_kernel[(1,)](x, out, 50, BLOCK=64)
    want = torch.stack([torch.tanh(x), torch.erf(x), x.abs() ** 1.5, torch.rsqrt(x.abs() + 1)])
    return (out - want).abs().max().item()
"""


@pytest.mark.slow
def test_libdevice_runs_in_the_interpreter_and_compiles_to_libdevice(tmp_path):
    result = _run(tmp_path, LIBDEVICE)
    assert result["check"] <= 1e-6
    assert [k["ok"] for k in result["compiled"]] == [True], result["compiled"]


_UNARY = {
    "exp": (torch.exp, -3, 3),
    "log": (torch.log, 0.01, 5),
    "sqrt": (torch.sqrt, 0, 5),
    "rsqrt": (torch.rsqrt, 0.01, 5),
    "tanh": (torch.tanh, -5, 5),
    "erf": (torch.erf, -3, 3),
    "erfc": (torch.erfc, -3, 3),
    "erfinv": (torch.erfinv, -0.99, 0.99),
    "sin": (torch.sin, -4, 4),
    "cos": (torch.cos, -4, 4),
    "tan": (torch.tan, -1, 1),
    "asin": (torch.asin, -1, 1),
    "acos": (torch.acos, -1, 1),
    "atan": (torch.atan, -5, 5),
    "sinh": (torch.sinh, -3, 3),
    "cosh": (torch.cosh, -3, 3),
    "asinh": (torch.asinh, -3, 3),
    "atanh": (torch.atanh, -0.99, 0.99),
    "expm1": (torch.expm1, -2, 2),
    "log1p": (torch.log1p, -0.5, 3),
    "log2": (torch.log2, 0.01, 5),
    "log10": (torch.log10, 0.01, 5),
    "exp2": (torch.exp2, -3, 3),
    "lgamma": (torch.lgamma, 0.1, 5),
    "floor": (torch.floor, -3, 3),
    "ceil": (torch.ceil, -3, 3),
    "trunc": (torch.trunc, -3, 3),
    "rint": (torch.round, -3, 3),
    "abs": (torch.abs, -3, 3),
    "normcdf": (torch.special.ndtr, -3, 3),
    "normcdfinv": (torch.special.ndtri, 0.01, 0.99),
    "erfcx": (torch.special.erfcx, -2, 30),
    "cyl_bessel_i0": (torch.special.i0, -3, 3),
    "fast_expf": (torch.exp, -3, 3),
    "fast_logf": (torch.log, 0.01, 5),
}
_BINARY = {
    "pow": torch.pow,
    "atan2": torch.atan2,
    "hypot": torch.hypot,
    "fmod": torch.fmod,
    "copysign": torch.copysign,
    "fdim": lambda a, b: (a - b).clamp(min=0),
    "remainder": lambda a, b: a - b * torch.round(a / b),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(_UNARY))
def test_libdevice_unary_functions_match_torch(name, dtype):
    fn, low, high = _UNARY[name]
    x = np.random.default_rng(0).uniform(low, high, 512).astype(dtype)
    want = fn(torch.from_numpy(x).double()).to(torch.float32 if dtype == np.float32 else torch.float64).numpy()
    np.testing.assert_allclose(libdevice_numpy.evaluate(name, [x], np.dtype(dtype)), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(_BINARY))
def test_libdevice_binary_functions_match_torch(name):
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0.1, 3, 512).astype(np.float32), rng.uniform(-3, 3, 512).astype(np.float32)
    want = _BINARY[name](torch.from_numpy(a).double(), torch.from_numpy(b).double()).float().numpy()
    np.testing.assert_allclose(libdevice_numpy.evaluate(name, [a, b], np.dtype(np.float32)), want, rtol=1e-6, atol=1e-6)


def test_libdevice_rounding_modes_bracket_the_exact_result():
    a, b = np.array([1, 2, -1, 10], np.float32), np.array([3, 3, 3, 7], np.float32)
    down, up, zero, near = (
        libdevice_numpy.evaluate(f"div_{m}", [a, b], np.dtype(np.float32)) for m in ("rd", "ru", "rz", "rn")
    )
    assert np.array_equal(near, a / b)
    assert np.array_equal(np.nextafter(down, np.float32(np.inf)), up)
    assert np.array_equal(zero, np.where(a / b > 0, down, up))
    one, tiny = np.array([1.0]), np.array([1e-300])
    assert libdevice_numpy.evaluate("add_ru", [one, tiny], np.dtype(np.float64))[0] == np.nextafter(1.0, 2.0)
    assert libdevice_numpy.evaluate("fma_rz", [one, one, -tiny], np.dtype(np.float64))[0] == np.nextafter(1.0, 0.0)
    root_down, root_up = (
        libdevice_numpy.evaluate(f"sqrt_{m}", [np.array([2.0], np.float32)], np.dtype(np.float32))[0]
        for m in ("rd", "ru")
    )
    assert float(root_down) < math.sqrt(2) < float(root_up) == float(np.nextafter(root_down, np.float32(3)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_rounded_once_where_the_interpreter_has_no_native_one(dtype):
    """Triton before 3.7 has no native fma in its interpreter: the fallback rounds the exact
    value once, as the native one (Triton 3.7+) does, on random operands and on products
    that land next to a tie of the result's precision (where rounding twice goes wrong)."""
    from triton._C.libtriton import interpreter as native

    fma = getattr(native, "fma_fp32" if dtype == np.float32 else "fma_fp64", None)
    if fma is None:
        pytest.skip("this Triton has no native fma to compare with")
    rng = np.random.default_rng(7)
    a, b, c = (rng.standard_normal(20_000).astype(dtype) * dtype(10) ** rng.integers(-3, 4, 20_000) for _ in range(3))
    # z + x * y = 1 + 2^-p + 2^-(3p-2), just above the tie between 1 and 1 + 2^-(p-1): rounded
    # to a wider type first, it lands on the tie and then goes to 1 (even), not up
    step = 2.0 ** -np.finfo(dtype).nmant
    x, y = -(step / 2) * (1 - step), 1 + step
    a = np.concatenate([a, [x, 0.0, -0.0]])
    b = np.concatenate([b, [y, -1.0, 1.0]])
    c = np.concatenate([c, [y, -0.0, -0.0]])
    a, b, c = (x.astype(dtype) for x in (a, b, c))
    bits_of = np.uint32 if dtype == np.float32 else np.uint64
    got = libdevice_numpy._fma_from_exact([a, b, c], np.dtype(dtype))
    assert got.dtype == dtype
    assert np.array_equal(got.view(bits_of), fma(a, b, c).view(bits_of))  # signed zeros and all


def test_libdevice_integer_and_conversion_functions():
    def ev(name, *args, out=np.int32):
        return libdevice_numpy.evaluate(name, [np.asarray(a) for a in args], np.dtype(out)).tolist()

    assert ev("float2int_rn", np.array([2.5, 3.5, np.nan, 1e20], np.float32)) == [2, 4, 0, 2**31 - 1]
    assert ev("int2float_ru", np.array([16777217], np.int32), out=np.float32) == [16777218.0]
    assert ev("clz", np.array([1, 0, -1], np.int32)) == [31, 32, 0]
    assert ev("popc", np.array([7, -1], np.int64)) == [3, 64]
    assert ev("mulhi", np.array([2**30, -(2**30)], np.int32), np.array([8, 8], np.int32)) == [2, -2]
    assert ev(
        "byte_perm", np.array([0x33221100], np.int32), np.array([0x77665544], np.int32), np.array([0x0123], np.int32)
    ) == [0x00112233]
    assert ev("llround", np.array([2.5, -2.5], np.float32), out=np.int64) == [3, -3]
    assert ev("float_as_int", np.array([1.0], np.float32)) == [0x3F800000]


def test_libdevice_symbols_are_all_mapped_and_the_rest_say_so():
    import importlib

    cuda = importlib.import_module(libdevice_numpy.CUDA_MODULE)
    names = {n for n, f in vars(cuda).items() if callable(f) and getattr(f, "__module__", None) == cuda.__name__}
    assert names - set(libdevice_numpy.IMPLEMENTATIONS) == set(libdevice_numpy.UNSUPPORTED)
    with pytest.raises(libdevice_numpy.LibdeviceUnavailable, match="only be judged on a GPU"):
        libdevice_numpy.evaluate("j0", [np.zeros(2, np.float32)], np.dtype(np.float32))


WHAT_RAN = r"""
import linecache
import types

WORK = types.SimpleNamespace(calls=0, x=torch.ones(4))


@triton.constexpr_function
def block(n):
    WORK.__dict__["calls"] += 1
    WORK.__dict__["x"].add_(1)  # PyTorch inside a kernel body
    return n


@triton.jit
def counted_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, block(BLOCK))
    tl.store(x_ptr + offs, tl.load(x_ptr + offs))


NAME = "<swapped source>"
SHOWN = "def swapped_kernel(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
RAN = SHOWN + "    while True:\n        break\n"


def register(text):
    linecache.cache[NAME] = (len(text), None, text.splitlines(keepends=True), NAME)


def check():
    x = torch.zeros(8)
    for _ in range(3):
        counted_kernel[(1,)](x, BLOCK=8)
    register(RAN)
    namespace = {"tl": tl}
    exec(compile(RAN, NAME, "exec"), namespace)
    triton.jit(namespace["swapped_kernel"])[(1,)](x, BLOCK=8)
    register(SHOWN)  # what a compile check reading the source now would see
    sourceless = {"tl": tl}
    exec(compile("\n" * 500 + SHOWN.replace("swapped", "sourceless"), "<no file>", "exec"), sourceless)
    triton.jit(sourceless["sourceless_kernel"])[(1,)](x, BLOCK=8)
    return WORK.calls
"""


@pytest.mark.slow
def test_the_compile_check_compiles_what_ran_and_the_body_runs_no_pytorch(tmp_path):
    result = _run(tmp_path, WHAT_RAN)
    assert result["check"] == 1  # a constexpr_function runs once per arguments, as on a GPU
    assert any("`counted_kernel` ran PyTorch operators inside its body (aten::add_)" in f for f in result["findings"])
    compiled = {k["name"]: k for k in result["compiled"]}
    assert compiled["counted_kernel"]["ok"]
    assert not compiled["swapped_kernel"]["ok"] and "break" in compiled["swapped_kernel"]["message"].lower()
    assert not compiled["sourceless_kernel"]["ok"] and "has no source file" in compiled["sourceless_kernel"]["message"]
