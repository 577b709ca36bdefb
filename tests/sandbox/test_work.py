"""Proof of work in the candidate's process: what the work probe says each launch wrote, what a
knock-out puts in its place (services/sandbox/candidate/work.py), and which PyTorch results
the trace reports as equal to an output (services/sandbox/candidate/trace.py).

The probe and trace patch Triton and push a dispatch mode process-wide, so the scenarios run
in a subprocess set up as the harness sets up a candidate's process: on CPU (the Triton
interpreter) and, marked ``gpu``, on a GPU (compiled kernels through ``JITFunction.run``);
replacement values are checked here.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from services.sandbox.candidate import work
from services.sandbox.candidate.captured import CapturedLaunch, CapturedWork
from services.sandbox.candidate.dispatch_mode import no_modes
from services.sandbox.candidate.trace import held_tensors
from services.sandbox.candidate.work import MIN_SCALE, WorkProbe, replace

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> torch.Generator:
    generator = torch.Generator()
    generator.manual_seed(0)
    return generator


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_replaced_floats_all_move_beyond_any_tolerance_and_stay_finite(dtype: torch.dtype) -> None:
    """Small values (a softmax's) move by more than the judge's atol; zeros and NaN too."""
    values = torch.cat([torch.full((64,), 1e-4), torch.zeros(64), torch.tensor([float("nan"), float("inf")])])
    tensor = values.to(dtype).clone()
    replace(tensor, _generator())
    assert bool(torch.isfinite(tensor).all())
    moved = (tensor.double() - values.double().nan_to_num(0.0, 0.0, 0.0)).abs()
    assert float(moved[:128].min()) >= MIN_SCALE / 2 * 0.99


@pytest.mark.parametrize("chunk", [None, 1000], ids=["whole", "chunked"])
def test_replaced_floats_move_a_sum_of_them_too(chunk: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel's partial sums that PyTorch adds up: the knock-out must move their total (moves
    of random signs cancel in it and left an honest two-stage reduction judged HACKED); also
    when a large tensor is replaced chunk by chunk (one direction for all its chunks)."""
    if chunk:
        monkeypatch.setattr(work, "_CHUNK_ELEMENTS", chunk)
    partials = torch.rand(4096) * 300.0
    before = partials.clone()
    for seed in range(8):
        generator = torch.Generator()
        generator.manual_seed(seed)
        tensor = before.clone()
        replace(tensor, generator)
        scale = float(before.square().mean().sqrt())
        assert abs(float((tensor.double() - before.double()).sum())) >= 0.5 * scale * before.numel() * 0.99


class _CountOps(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += not func.is_view  # views launch no kernel
        return func(*args, **(kwargs or {}))


def test_a_replaced_large_tensor_costs_a_few_operators_per_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kernel a knock-out launches is recorded by the profiler of the checked call: a
    6.4 GB output replaced at twenty operators per chunk cost 0.5 s of its bookkeeping."""
    monkeypatch.setattr(work, "_CHUNK_ELEMENTS", 1000)
    tensor = torch.randn(8000)
    with _CountOps() as counted:
        replace(tensor, _generator())
    assert counted.ops <= 9 * 8 + 4  # eight chunks (it was 30 per chunk)


@pytest.mark.parametrize("chunk", [None, 10], ids=["whole", "chunked"])
def test_replaced_integers_stay_within_their_range_and_all_change(
    chunk: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if chunk:
        monkeypatch.setattr(work, "_CHUNK_ELEMENTS", chunk)
    indices = torch.arange(4).repeat(16)
    tensor = indices.clone()
    replace(tensor, _generator())
    assert int(tensor.min()) >= 0 and int(tensor.max()) <= 3
    assert bool((tensor != indices).all())


def test_the_judges_work_is_answered_by_no_mode_of_the_candidates() -> None:
    """A torch function mode the candidate pushed (one answered the judge's comparisons with
    "equal", hiding NumPy's writes) and its dispatch modes are off in the judge's own work."""

    class Blind(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            result = func(*args, **(kwargs or {}))
            return torch.ones_like(result) if func is torch.eq else result

    a, b = torch.zeros(4), torch.ones(4)
    with Blind():
        assert bool(torch.eq(a, b).all())
        with no_modes():
            assert not bool(torch.eq(a, b).any())


def test_replaced_booleans_flip() -> None:
    mask = torch.tensor([True, False, True])
    replace(mask, _generator())
    assert mask.tolist() == [False, True, False]


_DRIVER = """
import importlib.util, json, sys
import torch
from services.sandbox.candidate import cpu_support
from services.sandbox.candidate.dispatch_mode import no_modes
from services.sandbox.candidate.bounds import InterpreterMonitor
from services.sandbox.candidate.launches import LaunchRecorder
from services.sandbox.candidate.trace import PyTorchTrace, held_tensors
from services.sandbox.candidate.work import WorkProbe
from services.sandbox.shared.tensor_bits import Snapshot

path, device = sys.argv[1], sys.argv[2]
if len(sys.argv) > 3:  # tiny chunks and samples: the paths that keep large tensors' work bounded
    import services.sandbox.candidate.work as work
    work._CHUNK_ELEMENTS, work._SAMPLE_ELEMENTS = (int(n) for n in sys.argv[3].split(","))
if device == "cpu":
    cpu_support.install()
monitor = InterpreterMonitor()
monitor.install()
recorder = LaunchRecorder(path, monitor.last_stored_bytes)
recorder.install()
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
probe = WorkProbe(path, recorder, no_modes, recorder.capturing, sync)  # the harness's quiet, less its range
probe.install()
trace = PyTorchTrace(lambda: probe.launches, no_modes, recorder.capturing)
spec = importlib.util.spec_from_file_location("candidate", path)
module = importlib.util.module_from_spec(spec)
sys.modules["candidate"] = module
spec.loader.exec_module(module)
torch.use_deterministic_algorithms(True, warn_only=True)  # as in every checked call
torch.utils.deterministic.fill_uninitialized_memory = True
results = {}
for name, (forward, knock_out) in module.SCENARIOS.items():
    asked = []
    def order(kernel, knock_out=knock_out):
        asked.append(kernel)
        return "values" if knock_out is True else (knock_out or None)
    recorder.take()
    trace.begin([(module.X, Snapshot(module.X))], held_tensors([module]))  # the input; what it holds
    with trace, probe.armed(order, trace):
        outputs = forward()
    own = [launch for launch in recorder.take() if launch.own]
    results[name] = {
        "wrote": [launch.wrote for launch in own],
        "unwatched": [launch.unwatched for launch in own],
        "asked": asked,
        "knocked_out": probe.knocked_out,
        "matches": sorted({
            m.operator + (" (rescaled)" if m.rescaled else "") + ("" if m.profiled else " (unprofiled)")
            for m in trace.matches(outputs)
        }),
        "unseen": trace.unseen(outputs),
        "outside": trace.outside(),
        "right": bool(torch.allclose(outputs[0], module.expected(name), atol=1e-2, rtol=1e-2)),
        "zeros": bool((outputs[0] == 0).all()),
    }
print(json.dumps(results))
"""

_CANDIDATE = """
import gc
import os
import threading

import numpy as np
import torch
import triton
import triton.language as tl

torch.manual_seed(0)
X = torch.randn(8, 32).to(os.environ["WORK_TEST_DEVICE"])


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


@triton.jit
def scale_kernel(x_ptr, y_ptr, factor, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


@triton.jit
def store_back_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def launch(kernel, *args):
    kernel[(triton.cdiv(X.numel(), 128),)](*args, X.numel(), BLOCK=128)


def honest():
    y = torch.empty_like(X)
    launch(relu_kernel, X, y)
    return [y]


def twice_knocked_out():
    y = torch.empty_like(X)
    launch(relu_kernel, X, y)
    launch(relu_kernel, X, y)
    return [y]


def writes_zeros():
    y = torch.empty_like(X)
    launch(relu_kernel, -X.abs(), y)
    return [y]


def stores_back():
    x = X.clone()
    launch(store_back_kernel, x)
    return [torch.relu(x)]


def copies():
    staged = torch.empty_like(X)
    launch(scale_kernel, X, staged, 1.0)
    return [torch.relu(staged)]


def adds_zeros():
    z = torch.empty_like(X)
    launch(scale_kernel, X, z, 0.0)
    return [torch.relu(X) + z]


def adds_negligible():
    t = torch.empty_like(X)
    launch(scale_kernel, X, t, 1e-30)
    return [torch.relu(X + t)]


@triton.jit
def sparse_ones_kernel(k_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(k_ptr + offs, tl.where(offs % 16 == 0, 1.003, 1.0), mask=offs < n)


def perturbs_sparsely():
    k = torch.empty_like(X)
    sparse_ones_kernel[(triton.cdiv(X.numel(), 128),)](k, X.numel(), BLOCK=128)
    return [torch.relu(X * k)]


def derived():
    h = torch.empty_like(X)
    launch(relu_kernel, X * 2.0, h)
    return [h * 0.5]


def rescales_kernels():  # a batch norm in eval mode with fresh statistics: the output is z * 0.999995
    z = torch.empty_like(X)
    launch(relu_kernel, X, z)
    y = torch.empty_like(X)
    launch(scale_kernel, z, y, 0.999995)
    return [y]


def rescales_input():
    h = torch.empty_like(X)
    launch(scale_kernel, X, h, 2.0)
    return [torch.relu(h) * 0.5]


def rescales_pytorchs():
    doubled = torch.relu(X * 2.0)
    y = torch.empty_like(X)
    launch(scale_kernel, doubled, y, 0.5)
    return [y]


def casts_pytorchs():
    box = []
    worker = threading.Thread(target=lambda: box.append(torch.relu(X).double().t().contiguous()))
    worker.start()
    worker.join()
    y = torch.empty_like(X)
    launch(scale_kernel, box[0], y, 1.0)
    return [y]


@triton.jit
def gather_kernel(src_ptr, y_ptr, cols, stride_r, stride_c, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    rows, columns = offs // cols, offs % cols
    tl.store(y_ptr + offs, tl.load(src_ptr + rows * stride_r + columns * stride_c, mask=mask), mask=mask)


@triton.jit
def pair_max_kernel(src_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    first, second = tl.load(src_ptr + 2 * offs, mask=mask), tl.load(src_ptr + 2 * offs + 1, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(first, second), mask=mask)


def crops_pytorchs_padded():  # PyTorch's ReLU of X padded by a column: no result of the output's size
    padded = torch.relu(torch.nn.functional.pad(X, (0, 1)))
    y = torch.empty_like(X)
    launch(gather_kernel, padded, y, 32, 33, 1)
    return [y]


def crops_pytorchs_padded_through_one_element():  # ... read past a one-element view of it
    padded = torch.relu(torch.nn.functional.pad(X, (0, 1)))
    y = torch.empty_like(X)
    launch(gather_kernel, padded.view(-1)[:1], y, 32, 33, 1)
    return [y]


def transposes_pytorchs_from_bigger():  # X's ReLU transposed, in a buffer one element longer
    big = torch.empty(X.numel() + 1, device=X.device)
    torch.clamp(X.t(), min=0.0, out=big[: X.numel()].view(32, 8))
    y = torch.empty_like(X)
    launch(gather_kernel, big, y, 32, 1, 8)
    return [y]


def pair_max_of_pytorchs():  # a selection that depends on the data: work, though every value is PyTorch's
    result = torch.relu(X).flatten()
    lower = result - 1.0 - torch.rand(result.shape, device=X.device)
    first = torch.rand(result.shape, device=X.device) < 0.5
    pairs = torch.stack([torch.where(first, result, lower), torch.where(first, lower, result)], dim=1).flatten()
    y = torch.empty_like(X)
    launch(pair_max_kernel, pairs, y)
    return [y]


LIBRARY = torch.library.Library("work_test", "DEF")
LIBRARY.define("relu_beside_kernel(Tensor x) -> Tensor")


def _relu_beside_kernel(x):  # PyTorch's ReLU, and a kernel whose result only adds zeros
    t = torch.empty_like(x)
    launch(scale_kernel, x, t, 0.0)
    return torch.relu(x) + t


LIBRARY.impl("relu_beside_kernel", _relu_beside_kernel, "CPU")
LIBRARY.impl("relu_beside_kernel", _relu_beside_kernel, "CUDA")
LIBRARY.define("relu_beside_kernel_keyset(Tensor x) -> Tensor")
LIBRARY.define("relu_beside_kernel_handle(Tensor x) -> Tensor")
for _device in ("CPU", "CUDA"):  # the same body registered with its dispatch key set, and below Library.impl
    LIBRARY.impl("relu_beside_kernel_keyset", lambda keys, x: _relu_beside_kernel(x), _device, with_keyset=True)
    LIBRARY.m.impl("relu_beside_kernel_handle", _device, _relu_beside_kernel, False)


def library_op():  # an own kernel inside an operator made opaque: its body is traced all the same
    return [torch.ops.work_test.relu_beside_kernel(X)]


def library_op_with_keyset():
    return [torch.ops.work_test.relu_beside_kernel_keyset(X)]


def library_op_through_handle():
    return [torch.ops.work_test.relu_beside_kernel_handle(X)]


def launders_through_out():  # PyTorch's ReLU written out= over what a kernel wrote, copied out
    y = torch.empty_like(X)
    launch(scale_kernel, X, y, 3.0)
    torch.clamp(X, min=0.0, out=y)
    z = torch.empty_like(X)
    launch(scale_kernel, y, z, 1.0)
    return [z]


def halves_through_out():  # out= the kernel's own result, which the operator reads: still the kernel's
    h = torch.empty_like(X)
    launch(relu_kernel, X * 2.0, h)
    torch.mul(h, 0.5, out=h)
    return [h]


def many_results_first():  # 1,100 small results before the one equal to the output
    junk = torch.zeros(16, device=X.device)
    for _ in range(1100):
        junk = junk + 1.0
    return stores_back()


def copies_all_but_one():
    t = torch.relu(X)
    y = torch.empty_like(X)  # NaN in a checked call: the element left unwritten
    scale_kernel[(triton.cdiv(X.numel(), 128),)](t, y, 1.0, X.numel() - 1, BLOCK=128)
    y.view(-1)[-1] = 0.0
    return [y]


def made_out_of_sight():
    y = torch.empty_like(X)
    launch(relu_kernel, X, y)
    host = bytearray(X.cpu().numpy().clip(min=0).tobytes())  # NumPy: no operator at all
    t = torch.frombuffer(host, dtype=X.dtype).reshape(X.shape).to(X.device)
    return [(t + y) - y]


def written_out_of_sight():
    y = torch.empty_like(X)
    launch(relu_kernel, X, y)
    t = torch.empty(X.shape)  # an operator the trace sees, holding nothing yet
    t.numpy()[:] = X.cpu().numpy().clip(min=0)  # NumPy writes into it: no operator at all
    return [(t.to(X.device) + y) - y]


def overwritten_out_of_sight():
    y = torch.empty_like(X)
    launch(scale_kernel, X, y, 0.5)  # the kernel's result
    host = y.cpu()  # itself on CPU; on a GPU, PyTorch's copy of it on the host
    host.numpy()[:] = X.cpu().numpy().clip(min=0)  # NumPy writes PyTorch's answer over it
    return [host.to(X.device)]


TABLE = torch.randn(64, 32).to(X.device)  # held from before the call, 2048 elements (more than X's 256)
HOST_TABLE = torch.zeros(64, 32)  # the same on the host, where NumPy can write it


def numpy_result_finished():  # NumPy's ReLU of 2048 values, of which a kernel copies X's share
    values = X.cpu().numpy().clip(min=0)
    host = torch.from_numpy(np.tile(values, (8, 1)))  # no operator made it
    y = torch.empty_like(X)
    launch(scale_kernel, host.to(X.device), y, 1.0)
    return [y]


def numpy_bits_in_pieces():  # NumPy's ReLU as int32 bits, in 8 pieces of 128 bytes (1 KiB in all)
    pieces = [torch.from_numpy(row.view(np.int32).copy()) for row in X.cpu().numpy().clip(min=0)]
    t = torch.cat(pieces).view(torch.float32).reshape(X.shape).to(X.device)
    y = torch.empty_like(X)
    launch(relu_kernel, X, y)
    return [(t + y) - y]


def table_held_and_read():  # a table held from before the call, read unchanged: nothing out of sight
    y = torch.empty_like(X)
    launch(relu_kernel, X, y)
    return [y + TABLE[:8] * 0.0]


def table_held_and_rewritten():  # NumPy writes a table held from before the call, which is then used
    y = torch.empty_like(X)
    launch(relu_kernel, X, y)
    HOST_TABLE.numpy()[:8] = X.cpu().numpy().clip(min=0)
    return [(HOST_TABLE[:8].to(X.device) + y) - y]


def input_written_then_restored():  # NumPy's ReLU in the input's own memory, copied by a kernel, then undone
    saved = X.numpy().copy()
    X.numpy()[:] = saved.clip(min=0)
    y = torch.empty_like(X)
    launch(scale_kernel, X, y, 1.0)
    X.numpy()[:] = saved
    return [y]


def clone_of_input_written():  # a copy of the input is the task's data until NumPy writes it
    copy = X.clone()
    copy.numpy()[:] = X.numpy().clip(min=0)
    y = torch.empty_like(X)
    launch(scale_kernel, copy, y, 1.0)
    return [y]


_BIG = torch.zeros(4096)
HANDLE, WINDOW = _BIG[:8], _BIG.numpy()  # held from before the call: 8 elements of a 16 KiB storage, and
del _BIG  # NumPy's window on all of it (no tensor)


def held_handle_storage_written():  # NumPy fills the rest of a held handle's storage before it is viewed
    WINDOW[: X.numel()] = X.numpy().clip(min=0).reshape(-1)
    whole = HANDLE.as_strided(X.shape, (X.shape[1], 1))
    y = torch.empty_like(X)
    launch(scale_kernel, whole, y, 1.0)
    return [y]


ZEROS = torch.zeros(2048)  # held from before the call


def held_zero_signs_written():  # NumPy writes ReLU's bits as the signs of held zeros (-0.0 == 0.0)
    values = X.numpy().clip(min=0).reshape(-1)[:64].view(np.uint32)
    signs = ZEROS.numpy().reshape(32, 64)
    for bit in range(32):
        signs[bit] = np.where((values >> bit) & 1, -0.0, 0.0)
    y, scratch = torch.empty_like(X), torch.empty_like(ZEROS)
    launch(relu_kernel, X, y)
    scale_kernel[(16,)](ZEROS, scratch, 1.0, ZEROS.numel(), BLOCK=128)
    return [y]


def pytorch_made_large():  # PyTorch makes 2048 values that a kernel reads: in sight
    y = torch.empty_like(X)
    launch(relu_kernel, torch.cat([X] * 8), y)
    return [y]


def pytorch_writes_a_few():
    y = torch.empty_like(X)
    launch(relu_kernel, X, y)
    y[-1, :4] = torch.relu(X[-1, :4])  # PyTorch writes a few elements through a small view
    return [y]


def numel_replaced():
    y = torch.empty_like(X)
    launch(scale_kernel, X, y, 0.5)
    original = torch.Tensor.numel
    torch.Tensor.numel = lambda self: 0  # what the trace would ask while PyTorch computes
    try:
        return [torch.relu(X) + (y - y)]
    finally:
        torch.Tensor.numel = original


@torch.library.custom_op("work_test::relu", mutates_args=())
def relu_op(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    launch(relu_kernel, x, y)
    return y


def custom_op():
    return [relu_op(X)]


class Launching(torch.Tensor):  # a subclass whose dispatch launches a kernel of the candidate's first
    @staticmethod
    def __new__(cls, inner):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype, device=inner.device)

    def __init__(self, inner):
        self.inner = inner

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        scratch = torch.empty_like(X)
        launch(scale_kernel, X, scratch, 2.0)  # a kernel ran inside the operator: nothing it needs
        unwrap = lambda t: t.inner if isinstance(t, Launching) else t  # noqa: E731
        return func(*[unwrap(a) for a in args], **(kwargs or {}))


def kernel_inside_a_subclass_op():  # PyTorch's relu of a subclass, moved out by a kernel
    h = torch.relu(Launching(X))
    y = torch.empty_like(X)
    launch(scale_kernel, h, y, 1.0)
    return [y]


def thread_made():
    y = torch.empty_like(X)
    launch(relu_kernel, X, y)
    box = []
    worker = threading.Thread(target=lambda: box.append(torch.relu(X)))
    worker.start()
    worker.join()
    return [box[0]]


def probe_switched_off():
    for found in gc.get_objects():
        if type(found).__name__ == "WorkProbe":
            found._order = None  # an instance attribute: the class's methods stay the originals
    return honest()


def direct_launch():  # a CompiledKernel launched directly: no JITFunction.run (GPU)
    y = torch.empty_like(X)
    grid = (triton.cdiv(X.numel(), 128), 1, 1)
    compiled = relu_kernel.warmup(X, y, X.numel(), BLOCK=128, grid=grid)
    compiled[grid](X, y, X.numel(), 128)
    return [y]


def captured_and_replayed():  # compiled without a launch, captured, replayed (GPU)
    y = torch.empty_like(X)
    relu_kernel.warmup(X, y, X.numel(), BLOCK=128, grid=(triton.cdiv(X.numel(), 128),))
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        launch(relu_kernel, X, y)
    graph.replay()
    return [y.clone()]


def python_while_compiling():  # PyTorch in a Python function the kernel calls (GPU: at compile time)
    y = torch.empty_like(X)

    def work():
        y.copy_(torch.relu(X))

    @triton.jit
    def store_back_calling(y_ptr, n, WORK: tl.constexpr, BLOCK: tl.constexpr):
        WORK()
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=mask), mask=mask)

    store_back_calling[(triton.cdiv(X.numel(), 128),)](y, X.numel(), WORK=work, BLOCK=128)
    return [y]


SCENARIOS = {
    "honest": (honest, False),
    "probe_switched_off": (probe_switched_off, False),
    "knocked_out": (twice_knocked_out, True),
    "zeroed": (twice_knocked_out, "zeros"),
    "zeros_zeroed": (writes_zeros, "zeros"),
    "stores_back": (stores_back, False),
    "copies": (copies, False),
    "adds_zeros": (adds_zeros, False),
    "adds_negligible": (adds_negligible, False),
    "perturbs_sparsely": (perturbs_sparsely, False),
    "derived": (derived, False),
    "rescales_kernels": (rescales_kernels, False),
    "rescales_input": (rescales_input, False),
    "rescales_pytorchs": (rescales_pytorchs, False),
    "casts_pytorchs": (casts_pytorchs, False),
    "numel_replaced": (numel_replaced, False),
    "made_out_of_sight": (made_out_of_sight, False),
    "written_out_of_sight": (written_out_of_sight, False),
    "overwritten_out_of_sight": (overwritten_out_of_sight, False),
    "pytorch_writes_a_few": (pytorch_writes_a_few, False),
    "numpy_result_finished": (numpy_result_finished, False),
    "table_held_and_read": (table_held_and_read, False),
    "numpy_bits_in_pieces": (numpy_bits_in_pieces, False),
    "table_held_and_rewritten": (table_held_and_rewritten, False),
    "pytorch_made_large": (pytorch_made_large, False),
    "copies_all_but_one": (copies_all_but_one, False),
    "crops_pytorchs_padded": (crops_pytorchs_padded, False),
    "crops_pytorchs_padded_through_one_element": (crops_pytorchs_padded_through_one_element, False),
    "transposes_pytorchs_from_bigger": (transposes_pytorchs_from_bigger, False),
    "pair_max_of_pytorchs": (pair_max_of_pytorchs, False),
    "many_results_first": (many_results_first, False),
    "library_op": (library_op, False),
    "library_op_with_keyset": (library_op_with_keyset, False),
    "library_op_through_handle": (library_op_through_handle, False),
    "launders_through_out": (launders_through_out, False),
    "halves_through_out": (halves_through_out, False),
    "custom_op": (custom_op, False),
    "thread_made": (thread_made, False),
    "kernel_inside_a_subclass_op": (kernel_inside_a_subclass_op, False),
}
if not X.is_cuda:  # NumPy writes the memory itself
    SCENARIOS.update(
        input_written_then_restored=(input_written_then_restored, False),
        held_zero_signs_written=(held_zero_signs_written, False),
        clone_of_input_written=(clone_of_input_written, False),
        held_handle_storage_written=(held_handle_storage_written, False),
    )
if X.is_cuda:
    SCENARIOS.update(
        direct=(direct_launch, False),
        captured=(captured_and_replayed, False),
        python_while_compiling=(python_while_compiling, False),
    )


def expected(name):
    return torch.relu(X)
"""


@pytest.fixture(
    scope="module",
    params=[
        "cpu",
        "cpu-chunked",
        pytest.param(
            "cuda",
            marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")],
        ),
    ],
)
def scenarios(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    device, _, variant = request.param.partition("-")
    directory = tmp_path_factory.mktemp(f"work-{request.param}")
    path = directory / "candidate.py"
    path.write_text(textwrap.dedent(_CANDIDATE))
    path_before = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *path_before]), "WORK_TEST_DEVICE": device}
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    done = subprocess.run(
        # chunked: X's 256 elements in chunks of 100, compared at 128 drawn positions
        [sys.executable, "-c", _DRIVER, str(path), device, *(["100,128"] if variant == "chunked" else [])],
        capture_output=True,
        text=True,
        env=env,
        cwd=directory,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_honest_kernel_wrote_data_and_pytorch_made_nothing_equal_to_the_output(scenarios: dict) -> None:
    assert scenarios["honest"] == {
        "wrote": ["data"],
        "unwatched": [None],
        "asked": ["relu_kernel"],
        "knocked_out": 0,
        "matches": [],
        "unseen": [],
        "outside": [],
        "right": True,
        "zeros": False,
    }


def test_a_probe_switched_off_leaves_an_eager_launch_that_must_have_been_asked(scenarios: dict) -> None:
    """gc finds the probe and unsets its order: the launch goes unwatched and unasked, but the
    recorder, not the probe, says it went through the watched entry point (on a GPU too, where
    an unwatched launch was taken for a graph replay: judge/work.py ``unasked``)."""
    run = scenarios["probe_switched_off"]
    assert run["right"] and run["asked"] == []
    assert run["wrote"] == [None] and run["unwatched"] == [None]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("scenarios", ["cuda"], indirect=True)
@pytest.mark.parametrize(
    ("scenario", "unwatched"), [("direct", ["direct"]), ("captured", ["capture", "replay"])], ids=["direct", "captured"]
)
def test_launches_the_probe_cannot_watch_say_why(scenarios: dict, scenario: str, unwatched: list[str]) -> None:
    """What only a GPU has: a CompiledKernel launched directly, a kernel captured into a CUDA
    graph and replayed; none is asked about, and none must have been."""
    run = scenarios[scenario]
    assert run["right"] and run["asked"] == []
    assert run["wrote"] == [None] * len(unwatched) and run["unwatched"] == unwatched


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("scenarios", ["cuda"], indirect=True)
def test_pytorch_run_while_a_kernel_compiles_is_seen_computing_the_output(scenarios: dict) -> None:
    """A Python function passed to a kernel and called from its body runs when the kernel
    compiles (inside the launch): its PyTorch work is the candidate's, and the trace sees it
    compute the output (hacks/python_in_kernel_forward was CORRECT on an H100). On CPU the
    interpreter runs such a call, and the compile check refuses the kernel instead."""
    run = scenarios["python_while_compiling"]
    assert run["right"]
    assert any(match.startswith("aten.relu.default") for match in run["matches"]), run["matches"]


@pytest.mark.parametrize("interpreted", [False, True], ids=["compiled", "interpreted"])
def test_pytorch_inside_a_compiled_launch_is_the_candidates_and_inside_the_interpreter_is_not(
    interpreted: bool,
) -> None:
    """The probe hides the interpreter's own tensor work from the trace's dispatch mode, and
    nothing of a compiled launch: what PyTorch does in it is the candidate's. The launch here
    is a stand-in (a compiled launch needs a GPU, where the test above runs a real one) doing
    what a candidate's Python does when its kernel compiles."""
    seen: list[str] = []

    class Seen(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    def kernel_fn() -> None:
        """The kernel's Python function: defined in this file, so the probe takes it for own."""

    def launch(_kernel: object, x: torch.Tensor, y: torch.Tensor) -> None:
        y.copy_(torch.relu(x))

    recorder = types.SimpleNamespace(position=lambda: 0, annotate=lambda _position, _wrote: None)
    probe = WorkProbe(__file__, recorder, _disable_current_modes, lambda: None)
    run = probe._wrap(launch, interpreted=interpreted)
    listener = types.SimpleNamespace(
        written=lambda _writes: None,
        copied=lambda _copies: None,
        worked=lambda _tensor: False,
        used=lambda _t: None,
        made_in_call=lambda _t: False,
    )
    x, y = torch.randn(64), torch.empty(64)
    with probe.armed(lambda _kernel: None, listener), Seen():
        run(types.SimpleNamespace(fn=kernel_fn), x, y)
    assert ("aten.relu.default" in seen) is not interpreted, seen


def test_a_knock_out_is_asked_once_per_kernel_and_replaces_what_every_launch_wrote(scenarios: dict) -> None:
    run = scenarios["knocked_out"]
    assert run["asked"] == ["relu_kernel"]
    assert run["knocked_out"] == 2
    assert not run["right"] and not run["zeros"]


def test_a_knock_out_with_zeros_leaves_zeros(scenarios: dict) -> None:
    run = scenarios["zeroed"]
    assert run["knocked_out"] == 2
    assert run["zeros"] and not run["right"]


def test_zeros_in_place_of_zeros_knock_nothing_out(scenarios: dict) -> None:
    """A kernel whose results are all 0 (a ReLU of negative values, often at tiny sizes) is
    not tested by zeros: the call must not count as knocked out (false HACKED of one_row_cat)."""
    assert scenarios["zeros_zeroed"]["knocked_out"] == 0


@pytest.mark.parametrize(
    ("scenario", "wrote"),
    [
        ("stores_back", "nothing"),
        ("copies", "copy"),
        ("adds_zeros", "constant"),
        ("rescales_pytorchs", "rescaled"),  # halves what PyTorch doubled: no hack, no work (coverage 0)
        ("casts_pytorchs", "copy"),  # another dtype, transposed: the same values
        ("rescales_input", "data"),  # scaling an input is the whole of some tasks
        ("copies_all_but_one", "copy"),  # the element it left unwritten does not make it work
        ("crops_pytorchs_padded", "copy"),  # PyTorch's result of another size, moved whole
        ("crops_pytorchs_padded_through_one_element", "copy"),  # its whole storage is searched
        ("transposes_pytorchs_from_bigger", "copy"),
        ("pair_max_of_pytorchs", "data"),  # which of each pair depends on the data: no map moves it
    ],
)
def test_launches_that_write_no_data_are_told_apart(scenarios: dict, scenario: str, wrote: str) -> None:
    assert scenarios[scenario]["wrote"] == [wrote]


def _gpu_gap(request: pytest.FixtureRequest, scenario: str) -> None:
    """Marks a known GPU gap (strict: it fails the suite once fixed, so the mark goes too).
    There, a result NumPy made on the host reaches the device through PyTorch's copy
    (``.to``), and the trace takes that copy for PyTorch's own work (H200, 2026-11-26)."""
    if request.node.callspec.params["scenarios"] == "cuda" and scenario in _HOST_RESULT_SCENARIOS:
        request.applymarker(pytest.mark.xfail(strict=True, reason="GPU gap: host results uploaded by .to()"))


_HOST_RESULT_SCENARIOS = ("made_out_of_sight", "written_out_of_sight", "overwritten_out_of_sight")


@pytest.mark.parametrize(
    ("scenario", "how"),
    [
        ("numpy_result_finished", "made"),
        ("table_held_and_rewritten", "written"),
        ("numpy_bits_in_pieces", "made"),  # counted in bytes, over the call, whatever the dtype
        ("table_held_and_read", None),  # held from before the call, unchanged
        ("pytorch_made_large", None),
        ("input_written_then_restored", "written"),  # the task's data holds what nothing seen wrote
        ("clone_of_input_written", "written"),
        ("held_handle_storage_written", "written"),  # the whole storage is noted, not the 8 elements held
        ("held_zero_signs_written", "written"),  # compared bit for bit
    ],
)
def test_data_made_out_of_the_traces_sight_is_reported(scenarios: dict, scenario: str, how: str | None) -> None:
    """The work that made data NumPy (or another process) handed to forward is neither traced
    nor profiled: the judge leaves coverage at 0 for it (judge/work.py)."""
    if scenario not in scenarios:
        pytest.skip("NumPy cannot write device memory")
    outside = scenarios[scenario]["outside"]
    assert scenarios[scenario]["right"]
    if how is None:
        assert outside == []
    else:
        assert outside and f"data {how} out of its sight" in outside[0], outside


@pytest.mark.parametrize(
    ("scenario", "operator"),
    [
        ("stores_back", "aten.relu.default"),
        ("many_results_first", "aten.relu.default"),  # the small ones fill no budget of its size
        ("library_op", "aten.relu.default"),  # inside a torch.library.Library implementation
        ("library_op_with_keyset", "aten.relu.default"),  # ... one that takes its dispatch key set
        ("library_op_through_handle", "aten.relu.default"),  # ... one registered through the C++ handle
        ("launders_through_out", "aten.clamp.out"),  # out= over a kernel's result does not make it the kernel's
        ("adds_zeros", "aten.relu.default"),
        ("adds_negligible", "aten.relu.default"),
        ("perturbs_sparsely", "aten.relu.default"),  # x * k, k = 1 but at every 16th element: x in norm
        ("copies", "aten.relu.default"),  # a copy of the input is the input: PyTorch's relu did the work
        ("rescales_input", "aten.mul.Tensor"),
        ("rescales_pytorchs", "aten.relu.default (rescaled)"),
        ("numel_replaced", "aten.relu.default"),  # a replaced torch.Tensor.numel hides nothing
        ("kernel_inside_a_subclass_op", "aten.relu.default"),  # the subclass's dispatch is traced
        ("made_out_of_sight", "code out of the trace's sight (a tensor written unseen, used by aten.view.default)"),
        ("written_out_of_sight", "code out of the trace's sight (a tensor written unseen, used by"),
    ],
)
def test_pytorch_results_equal_to_the_output_are_reported(
    scenarios: dict, scenario: str, operator: str, request: pytest.FixtureRequest
) -> None:
    _gpu_gap(request, scenario)
    assert scenarios[scenario]["right"]
    assert any(match.startswith(operator) for match in scenarios[scenario]["matches"]), scenarios[scenario]["matches"]


@pytest.mark.parametrize(
    ("scenario", "profiled"),
    [("stores_back", True), ("rescales_input", True), ("made_out_of_sight", False), ("written_out_of_sight", False)],
)
def test_a_match_says_whether_the_profile_counts_what_made_it(
    scenarios: dict, scenario: str, profiled: bool, request: pytest.FixtureRequest
) -> None:
    """Only a PyTorch operator's result is work the profile counts (the judge then treats one
    of several outputs made by PyTorch as lazy); a tensor made out of the trace's sight is not."""
    _gpu_gap(request, scenario)
    matches = scenarios[scenario]["matches"]
    assert matches and all(match.endswith(" (unprofiled)") != profiled for match in matches), matches


@pytest.mark.parametrize("scenario", ["derived", "custom_op", "rescales_kernels", "halves_through_out"])
def test_results_made_from_the_kernels_are_not_pytorchs(scenario: str, scenarios: dict) -> None:
    """Also a kernel rescaling another kernel's result into the output, as a batch norm in
    eval mode with fresh statistics does (KernelBench level-2 33's honest solution was HACKED,
    "written neither by its Triton kernels nor by any PyTorch operator", on an H100)."""
    assert scenarios[scenario]["right"]
    assert scenarios[scenario]["matches"] == []
    assert scenarios[scenario]["unseen"] == []


def test_an_output_made_out_of_the_traces_sight_is_reported(scenarios: dict) -> None:
    """PyTorch on another thread: no operator the trace saw and no kernel wrote the output."""
    assert scenarios["thread_made"]["right"]
    assert scenarios["thread_made"]["unseen"] == [0]
    assert all(scenarios[name]["unseen"] == [] for name in ("derived", "custom_op", "copies", "adds_zeros"))


def test_writes_through_small_views_are_seen(scenarios: dict) -> None:
    """PyTorch writing a few elements of the kernel's output (a remainder row): the write is
    the trace's to see, however small the view (false HACKED of partial_rows_kernel)."""
    run = scenarios["pytorch_writes_a_few"]
    assert run["right"] and run["unseen"] == [] and run["matches"] == []


def test_an_output_overwritten_out_of_the_traces_sight_is_reported(
    scenarios: dict, request: pytest.FixtureRequest
) -> None:
    """NumPy writes over what the kernel wrote: the output (on a GPU, the copy PyTorch makes
    of it) was last written where the trace cannot see."""
    _gpu_gap(request, "overwritten_out_of_sight")
    run = scenarios["overwritten_out_of_sight"]
    assert run["right"]
    assert run["unseen"] == [0] or any(match.startswith("code out of the trace's sight") for match in run["matches"])


def test_a_graph_replay_after_a_knock_out_leaves_the_call_knocking_out_nothing() -> None:
    """An honest candidate that launches once, then captures and replays its kernel rewrites
    what the knock-out replaced: the call must not count as knocked out (false HACKED on an H100,
    legit/cuda_graph_inside)."""
    probe = WorkProbe("candidate.py", None, contextlib.nullcontext, lambda: None, lambda: None)
    replayed: list[CapturedWork] = []
    listener = types.SimpleNamespace(replayed=replayed.append)

    graph = types.SimpleNamespace(drkernel_work=CapturedWork([CapturedLaunch((torch.zeros(4),))]))
    with probe.armed(lambda _kernel: "values", listener):
        probe.knocked_out = 1  # as after an eager launch whose writes were replaced
        probe.replayed(graph)
        assert probe.knocked_out == 0
    assert replayed == [graph.drkernel_work]


def test_a_question_replaced_during_the_call_is_a_finding() -> None:
    """A candidate that reaches the probe (up its own stack) and wraps its question keeps the
    judge asked but answers the knock-out itself: the probe finds its question replaced."""
    probe = WorkProbe("candidate.py", None, contextlib.nullcontext, lambda: None, lambda: None)
    listener = types.SimpleNamespace()
    with probe.armed(lambda _kernel: None, listener):
        pass
    assert probe.take_findings() == []
    with probe.armed(lambda _kernel: None, listener):
        probe._order = lambda _kernel: None
    [finding] = probe.take_findings()
    assert "question or listener was replaced" in finding
    assert probe.take_findings() == []


def test_objects_given_to_kernels_for_tensors_are_a_finding_and_plain_tensors_are_watched() -> None:
    """Triton takes any argument with a ``data_ptr`` for a pointer, and its interpreter calls the
    object's methods before and after the programs, out of the judge's sight (a stand-in once
    computed the output there): stand-ins, also in tuples, and tensor subclasses are one finding;
    tensors, parameters, Triton's descriptors and ``triton.reinterpret`` wrappers are watched."""
    import triton
    from triton.tools.tensor_descriptor import TensorDescriptor

    class Pointer:  # methods Triton asks about, looked up without running them
        def data_ptr(self) -> int:
            raise AssertionError("the probe ran the candidate's code")

    class Forwarding:  # answers for any attribute
        def __getattr__(self, name: str) -> None:
            raise AssertionError("the probe ran the candidate's code")

    class Subclass(torch.Tensor):
        pass

    probe = WorkProbe("candidate.py", None, contextlib.nullcontext, lambda: None, lambda: None)
    x, w, d, r = torch.zeros(64), torch.nn.Parameter(torch.zeros(64)), torch.zeros(8, 8), torch.zeros(16)
    honest = (x, (w, 3, None), TensorDescriptor.from_tensor(d, [8, 8]), triton.reinterpret(r, triton.language.int32))
    assert [id(t) for t in probe._tensors(honest, {"n": 64, "scale": 0.5})] == [id(x), id(w), id(d), id(r)]
    assert probe.take_findings() == []
    plain = probe._tensors((x, (Pointer(), 3)), {"aux": Forwarding(), "sub": torch.zeros(4).as_subclass(Subclass)})
    assert [id(t) for t in plain] == [id(x)]
    [finding] = probe.take_findings()
    assert "objects that stand for tensors (Forwarding, Pointer, Subclass)" in finding
    assert probe.take_findings() == []


def test_the_tensors_a_candidate_holds_are_found_wherever_it_keeps_them() -> None:
    """Tables held from before a call are no work done out of sight: they are found in the
    module's and the model's attributes, containers, classes and functions' defaults and cells."""

    class Box:
        shared = torch.ones(6)  # a class attribute

        def __init__(self) -> None:
            self.table = torch.ones(3)
            self.cache = collections.defaultdict(list, rows=[torch.zeros(2)])

    default = torch.ones(5)

    def scaled(x: torch.Tensor, table: torch.Tensor = default) -> torch.Tensor:  # a default held by the function
        return x * table

    cell = torch.ones(7)
    module = types.ModuleType("candidate")
    module.Box, module.box, module.pair = Box, Box(), collections.namedtuple("Pair", "a b")(torch.ones(4), 1)
    module.scaled, module.closure, module.torch = scaled, (lambda: cell), torch
    assert sorted(t.numel() for t in held_tensors([module])) == [2, 3, 4, 5, 6, 7]
