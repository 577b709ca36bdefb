"""Collecting the kernels of forward calls.

On a GPU, torch.profiler's CUDA activity (Kineto/CUPTI) lists every device kernel, memcpy and
memset with its measured device time; the denominator is device time only.

On CPU the Triton interpreter runs a kernel hundreds of times slower than compiled code while
PyTorch's operators run natively, so wall time would credit the candidate with almost any
kernel it wrote. CPU profiles therefore model device time on a GPU-like roofline instead:
each Triton launch (the useful bytes and dot-product FLOPs the interpreter hooks count:
distinct bytes read and written, FLOPs capped by what the launch read and wrote; see
services/sandbox/candidate/bounds.py) and each PyTorch operator (bytes of its input tensors
read and written once, FLOPs from torch.profiler) costs ``max(bytes / BANDWIDTH, flops /
MATH_RATE)``. The same question, "which code does the work", gets the same kind of answer on
both devices.

Every PyTorch operator counts, on every thread, whatever profiler event it is nested in (a
``record_function`` range, a custom op). An operator called by another counted operator is
charged to its caller, which costs the larger of its own cost and the sum of its callees'
(a composite such as ``einsum`` records no FLOPs and no shapes of its tensor lists, but the
matrix product it calls does). The one exception is the interpreter's own bookkeeping
around each launch (it allocates views of the arguments and copies them back), nested in the
launch's range: operators the kernel's body itself runs are counted, and make the verdict
HACKED anyway (services/sandbox/candidate/kernel_code.py), and so is whatever runs nested in
that bookkeeping (a dispatch mode of the candidate's can turn the copy-back into a matrix
product). Work the judge does inside a profiled call runs in a ``JUDGE_RANGE`` range and is left
out on both devices (on a GPU with the kernels its operators launch). The sandbox refuses a
forward that names a range so itself, or that opens ranges named like a launch's
(``TRITON_RANGE_PREFIX``) on CPU: ``profile_judged_calls`` counts both (``RangeCounts``).
"""

from __future__ import annotations

import bisect
import functools
import math
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch._C._profiler import _ExperimentalConfig
from torch.autograd import DeviceType
from torch.autograd.profiler import profile

TRITON_RANGE_PREFIX = "triton::"
# A profiler range around the judge's own work inside a profiled call (the sandbox's
# snapshots and checks in the candidate's process): not counted.
JUDGE_RANGE = "drkernel::judge"
# The roofline of the CPU model, H100-like: HBM3 bandwidth and TF32 tensor-core rate.
BANDWIDTH_BYTES_PER_US = 3.0e6
MATH_RATE_FLOPS_PER_US = 4.0e8
_ASSUMED_ELEMENT_BYTES = 4
# Events torch.profiler leaves out of its event tree: its own bookkeeping and the memory records.
_PROFILER_BOOKKEEPING = frozenset(
    {
        "[memory]",
        "[OutOfMemory]",
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)
# Operators that only allocate or reinterpret memory: no device kernel, no modelled time (and
# every view operator, by its schema: _is_view). Allocations: in deterministic mode they fill
# the memory they return (NaN), as a child op.
_ALLOCATION_OPS = frozenset({"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty"})
_NO_KERNEL_OPS = frozenset(
    {
        "aten::empty",
        "aten::empty_like",
        "aten::empty_strided",
        "aten::view",
        "aten::reshape",
        "aten::_reshape_alias",
        "aten::as_strided",
        "aten::t",
        "aten::transpose",
        "aten::permute",
        "aten::expand",
        "aten::unsqueeze",
        "aten::squeeze",
        "aten::select",
        "aten::slice",
        "aten::alias",
        "aten::detach",
        "aten::lift_fresh",
        "aten::resolve_conj",
        "aten::resolve_neg",
        "aten::unflatten",
        "aten::flatten",
        "aten::numpy_T",
        "aten::new_empty",
        "aten::set_",
        "aten::result_type",
    }
)
# What the Triton interpreter itself runs around a launch: a copy of each argument's storage
# back onto itself once the programs ran (no device work on a GPU).
_INTERPRETER_OPS = frozenset({"aten::copy_"})

# launches, bytes moved and FLOPs per interpreted Triton kernel since the last call
Traffic = Callable[[], dict[str, tuple[int, int, int]]]


@dataclass(frozen=True)
class RangeCounts:
    """Profiler ranges in profiled calls whose names only the judge may use: its own
    (``JUDGE_RANGE``) and those named like an interpreted launch's (``TRITON_RANGE_PREFIX``),
    with the interpreted launches, each of which opens one such range on CPU. More ranges than
    the judge opened, or than launches ran, mean forward named some so itself."""

    judge: int
    triton: int
    launches: int


@dataclass(frozen=True)
class KernelTime:
    """One kernel name's launches and total time over the profiled calls."""

    name: str
    launches: int
    time_us: float


def modeled_us(moved_bytes: float, flops: float) -> float:
    """Roofline time of a kernel on the modelled device."""
    return max(moved_bytes / BANDWIDTH_BYTES_PER_US, flops / MATH_RATE_FLOPS_PER_US)


def _device_kernels(events: list[Any]) -> list[KernelTime]:
    """Device activity (kernels, memcpys, memsets) per name from Kineto's raw events, less
    what the operators inside a ``JUDGE_RANGE`` range launched. A range shows on the device
    too, as an annotation spanning the kernels launched in it: not device work itself. Each
    device event names the operator that launched it (``linked_correlation_id``); an operator
    is inside a range when it started there on the range's thread. Raw events, not
    torch.profiler's event tree: building that tree took seconds for a call whose judge's
    checks launch thousands of operators on large tensors."""
    by_device: dict[Any, list[Any]] = defaultdict(list)
    for event in events:  # one pass: every accessor calls into C++, and a checked call has many events
        by_device[event.device_type()].append(event)
    cpu, device = by_device[DeviceType.CPU], by_device[DeviceType.CUDA]
    ranges: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for event in sorted((e for e in cpu if e.name() == JUDGE_RANGE), key=lambda e: e.start_ns()):
        spans = ranges[event.start_thread_id()]
        if spans and event.start_ns() <= spans[-1][1]:  # nested or overlapping: one span
            spans[-1] = (spans[-1][0], max(spans[-1][1], event.end_ns()))
        else:
            spans.append((event.start_ns(), event.end_ns()))
    starts = {thread: [start for start, _ in spans] for thread, spans in ranges.items()}

    def inside(event: Any) -> bool:
        thread = event.start_thread_id()
        if thread not in starts:
            return False
        start = event.start_ns()
        index = bisect.bisect_right(starts[thread], start) - 1
        return index >= 0 and start <= ranges[thread][index][1]

    judged = {event.correlation_id() for event in cpu if inside(event)}
    launches: dict[str, int] = defaultdict(int)
    times: dict[str, float] = defaultdict(float)
    for event in device:
        if not event.is_user_annotation() and event.linked_correlation_id() not in judged:
            name = event.name()
            launches[name] += 1
            times[name] += event.duration_ns() / 1000
    return [KernelTime(name, launches[name], times[name]) for name in times]


def profile_calls(
    run: Callable[[], Any], calls: int, device: torch.device, interpreted: Traffic | None = None
) -> list[KernelTime]:
    """Runs ``run`` ``calls`` times under the profiler and totals time per kernel name.
    ``interpreted`` gives the traffic of interpreted Triton launches (CPU only)."""
    return profile_judged_calls(run, calls, device, interpreted)[0]


def kineto_profile(device: torch.device, *, shapes_and_flops: bool = False, every_thread: bool = False) -> profile:
    """The profiler over Kineto, with ``device``'s activity (CUDA: CUPTI) besides the CPU's:
    what ``torch.profiler.profile`` wraps, without its look at TorchInductor's settings, whose
    first use imports TorchInductor and TorchDynamo (1.6 s of CPU in a process that had none)."""
    config = _ExperimentalConfig(profile_all_threads=True) if every_thread else None
    return profile(
        use_device="cuda" if device.type == "cuda" else None,
        use_kineto=True,
        record_shapes=shapes_and_flops,
        with_flops=shapes_and_flops,
        experimental_config=config,
    )


def start_cuda_tracing(device: torch.device) -> None:
    """Starts CUPTI, then creates ``device``'s CUDA context and traces one kernel in it, so
    that no later profile pays CUPTI's start. CUPTI starts in seconds before a context exists
    and takes longer after; and a process whose CUPTI started before its context but has traced
    no kernel since replays CUDA graphs slower and unsteadily (on an H100, 90 calls of
    ``l2_gemm_bias_relu``'s reference: 11.5-12.4 us per call, CV 16-22%, host time of one
    replay 280 us; once one kernel was traced, 10.9 us, CV 0.2%, as in a process that never
    started CUPTI)."""
    with kineto_profile(device):
        pass
    torch.cuda.init()
    torch.cuda.set_device(device)
    with kineto_profile(device):
        torch.ones(1, device=device).add_(1)
        torch.cuda.synchronize(device)


def profile_judged_calls(
    run: Callable[[], Any], calls: int, device: torch.device, interpreted: Traffic | None = None
) -> tuple[list[KernelTime], RangeCounts]:
    """profile_calls for calls the judge works inside of: work in a ``JUDGE_RANGE`` range is
    left out, with the device kernels its operators launched; also counts the ranges whose names
    only the judge may use, for it to tell whether forward opened some."""
    cuda = device.type == "cuda"
    # Operators on threads other than the caller's are recorded too: on CPU they count, and on
    # a GPU the judge's ranges on such a thread (the probe's work around a thread's launch)
    # leave out the kernels they launched.
    with kineto_profile(device, shapes_and_flops=not cuda, every_thread=True) as prof:
        for _ in range(calls):
            run()
        if cuda:
            torch.cuda.synchronize(device)
    raw = prof.kineto_results.events()
    cpu = [event for event in raw if event.device_type() == DeviceType.CPU]
    traffic = interpreted() if interpreted else {}
    ranges = RangeCounts(
        judge=sum(event.name() == JUDGE_RANGE for event in cpu),
        # ranges only: an operator of a library the candidate named "triton" is no launch's
        triton=sum(event.is_user_annotation() and event.name().startswith(TRITON_RANGE_PREFIX) for event in cpu),
        launches=sum(count for count, _, _ in traffic.values()),
    )
    if cuda:
        return _device_kernels(raw), ranges
    launches: dict[str, int] = defaultdict(int)
    times: dict[str, float] = defaultdict(float)
    for name, time_us in _charged_operators(raw):
        launches[name] += 1
        times[name] += time_us
    for name, (count, moved, flops) in traffic.items():
        launches[name] += count
        times[name] += modeled_us(moved, flops)
    return [KernelTime(name, launches[name], times[name]) for name in times], ranges


@functools.cache
def _is_view(name: str) -> bool:
    """Whether every overload of an ATen operator returns only views of its inputs (its
    schema's alias annotation, nothing written): ``movedim``, ``expand_as``, ``view_as``, and
    ``to`` or ``contiguous`` that have nothing to do. The copy such an operator must sometimes
    make runs in a child operator, which is charged in its place."""
    schemas = torch._C._jit_get_schemas_for_operator(name)
    returns = [r for schema in schemas for r in schema.returns if "Tensor" in str(r.type)]
    return bool(returns) and all(r.alias_info is not None and not r.alias_info.is_write for r in returns)


def _no_kernel(name: str) -> bool:
    return name in _NO_KERNEL_OPS or _is_view(name)


def _with_callers(events: list[Any]) -> Iterator[tuple[Any, list[Any]]]:
    """Kineto's CPU events, each with the events it is nested in on its thread,
    innermost first, as torch.profiler's event tree nests them (asynchronous events stand
    alone). Read from the raw events: building that tree took as long as the profiled calls."""
    cpu = [
        event
        for event in events
        if event.device_type() == DeviceType.CPU
        and event.name() not in _PROFILER_BOOKKEEPING
        and not getattr(event, "is_hidden_event", lambda: False)()
    ]
    synchronous = [e for e in cpu if not e.is_async() and e.start_thread_id() == e.end_thread_id()]
    synchronous.sort(key=lambda e: (e.start_thread_id(), e.start_ns(), -e.end_ns()))
    open_ranges: list[Any] = []
    for event in synchronous:
        while open_ranges and (
            open_ranges[-1].start_thread_id() != event.start_thread_id()
            or event.start_ns() >= open_ranges[-1].end_ns()
            or event.end_ns() > open_ranges[-1].end_ns()
        ):
            open_ranges.pop()
        yield event, list(reversed(open_ranges))
        open_ranges.append(event)
    for event in cpu:
        if event.is_async() or event.start_thread_id() != event.end_thread_id():
            yield event, []


def _charged_operators(events: list[Any]) -> list[tuple[str, float]]:
    """The PyTorch operators a CPU profile charges, each with its modelled time: an operator
    called by no other charged operator, at the larger of its own cost (its input bytes read
    and written once, its FLOPs) and the sum of what the charged operators it called cost.
    The profiler records FLOPs for few operators and no shapes for tensor lists, so a composite
    (``einsum``, ``linalg.multi_dot``, ``_foreach_exp``, ``cdist``) costs no less than the
    matrix products and element-wise operators it runs. An operator nested in one left out as
    the interpreter's bookkeeping or an allocation's fill is charged all the same, to its
    nearest charged caller: what the candidate's code runs there is its work (the judge's own
    operators are left out with everything they call, by ``_costs_device_time``)."""
    own: dict[int, float] = {}
    caller_of: dict[int, int | None] = {}
    names: dict[int, str] = {}
    for event, callers in _with_callers(events):
        name, caller_names = event.name(), [c.name() for c in callers]
        if not _costs_device_time(name, caller_names):
            continue
        caller = next((c for c in callers if id(c) in own), None)
        numel = sum(math.prod(shape) for shape in event.shapes() if shape)
        own[id(event)] = modeled_us(2 * numel * _ASSUMED_ELEMENT_BYTES, event.flops() or 0)
        caller_of[id(event)] = None if caller is None else id(caller)
        names[id(event)] = name
    called: dict[int, float] = defaultdict(float)
    charged: list[tuple[str, float]] = []
    for key in reversed(own):  # callees come after their callers
        cost = max(own[key], called[key])
        caller_key = caller_of[key]
        if caller_key is None:
            charged.append((names[key], cost))
        else:
            called[caller_key] += cost
    return charged


def _is_operator(name: str) -> bool:
    """An ATen operator that would launch a device kernel of its own (not a view)."""
    return name.startswith("aten::") and not _no_kernel(name)


def _costs_device_time(name: str, callers: list[str]) -> bool:
    """Whether a CPU profile charges an event named ``name``, nested in ``callers`` (innermost
    first), as PyTorch's work (the module docstring says which is). A fill inside an allocation
    is not: that is PyTorch's deterministic mode filling fresh memory (the sandbox's checked
    calls turn it on), not work the forward asked for."""
    if not _is_operator(name):
        return False
    if callers and callers[0] in _ALLOCATION_OPS:
        return False
    for caller in callers:
        if caller == JUDGE_RANGE:
            return False  # the judge's own work
        if caller.startswith(TRITON_RANGE_PREFIX) and name in _INTERPRETER_OPS:
            return False
    return True


def method(device: torch.device) -> str:
    """How profiles are taken on this device, in words."""
    if device.type == "cuda":
        return "torch.profiler CUDA activity (Kineto/CUPTI): device time of every kernel, memcpy and memset"
    return (
        "CPU model: device time on an H100-like roofline (3 TB/s, 400 TFLOP/s) from the useful bytes and "
        "FLOPs of each interpreted Triton launch (distinct bytes read and written, FLOPs capped by them) "
        "and of each PyTorch operator on any thread, whatever range it runs in"
    )
