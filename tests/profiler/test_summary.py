"""Profiles, coverage and the bottleneck text on hand-made numbers, and what CPU profiles charge."""

from __future__ import annotations

import threading

import pytest
import torch
from torch.autograd import DeviceType
from torch.utils._python_dispatch import TorchDispatchMode

from services.profiler.collect import (
    JUDGE_RANGE,
    TRITON_RANGE_PREFIX,
    KernelTime,
    RangeCounts,
    _device_kernels,
    _with_callers,
    kineto_profile,
    modeled_us,
    profile_calls,
    profile_judged_calls,
)
from services.profiler.summary import bottleneck_text, kernel_profiles, profile_summary


def test_kernel_profiles_are_per_call_sorted_and_matched_exactly_by_name():
    kernels = [
        KernelTime("fused_kernel", 3, 30.0),
        KernelTime("aten::mm", 6, 90.0),
        KernelTime("fused_kernel_v2", 3, 3.0),
    ]
    profiles = kernel_profiles(kernels, own={"fused_kernel"}, calls=3)
    assert [p.name for p in profiles] == ["aten::mm", "fused_kernel", "fused_kernel_v2"]
    mm, fused, similar = profiles
    assert (mm.calls, mm.device_time_us, mm.mean_device_time_us) == (2.0, 30.0, 15.0)
    assert fused.is_candidate and not mm.is_candidate
    assert not similar.is_candidate  # no substring matching


def test_coverage_is_own_device_time_over_all_device_time():
    candidate = kernel_profiles([KernelTime("mine", 1, 25.0), KernelTime("aten::mm", 1, 75.0)], {"mine"}, 1)
    reference = kernel_profiles([KernelTime("aten::mm", 1, 80.0), KernelTime("aten::relu", 1, 20.0)], (), 1)
    summary = profile_summary(candidate, reference, "test")
    assert summary.coverage == pytest.approx(0.25)
    assert summary.total_device_time_us == pytest.approx(100.0)
    assert summary.reference_total_device_time_us == pytest.approx(100.0)
    text = bottleneck_text(summary)
    assert "25% of the forward's device time" in text
    assert "aten::mm (PyTorch) 75 us (75%)" in text and "Fuse the work of aten::mm" in text


def test_roofline_model_takes_the_slower_of_memory_and_math():
    assert modeled_us(3.0e6, 0) == pytest.approx(1.0)  # 3 MB at 3 TB/s
    assert modeled_us(0, 4.0e8) == pytest.approx(1.0)  # 400 MFLOP at 400 TFLOP/s
    assert modeled_us(3.0e6, 8.0e8) == pytest.approx(2.0)


def test_cpu_profile_models_pytorch_operators_from_bytes_and_flops():
    a, b = torch.randn(256, 512), torch.randn(512, 128)
    kernels = {k.name: k for k in profile_calls(lambda: torch.relu(a @ b), 2, torch.device("cpu"))}
    assert kernels["aten::matmul"].launches == 2 and kernels["aten::relu"].launches == 2
    flops = 2 * 256 * 512 * 128
    assert kernels["aten::matmul"].time_us == pytest.approx(2 * modeled_us(2 * 4 * (256 * 512 + 512 * 128), flops))
    assert kernels["aten::relu"].time_us == pytest.approx(2 * modeled_us(2 * 4 * 256 * 128, 0))


def test_cpu_profile_charges_a_composite_operator_what_the_operators_it_calls_cost():
    """einsum, multi_dot and the _foreach_ operators record no FLOPs and no shapes of their
    tensor lists; the matrix products and element-wise operators they call do."""
    a, b = torch.randn(128, 256), torch.randn(256, 64)
    xs = [torch.randn(64, 64) for _ in range(4)]

    def charged(run):
        return {k.name: k.time_us for k in profile_calls(run, 1, torch.device("cpu"))}

    product = charged(lambda: torch.mm(a, b))["aten::mm"]
    assert charged(lambda: torch.einsum("ik,kj->ij", a, b))["aten::einsum"] == pytest.approx(product, rel=0.01)
    assert charged(lambda: torch.linalg.multi_dot([a, b]))["aten::linalg_multi_dot"] == pytest.approx(product)
    one_exp = charged(lambda: torch.exp(xs[0]))["aten::exp"]
    assert charged(lambda: torch._foreach_exp(xs))["aten::_foreach_exp"] == pytest.approx(4 * one_exp)
    assert charged(lambda: torch.cdist(a, b.T))["aten::cdist"] >= product


def test_cpu_profile_charges_views_nothing_and_the_copies_they_make_in_full():
    """Views and no-op conversions launch no kernel on a GPU; when a view operator must copy
    (contiguous of a transpose), the copy is charged."""
    x, y = torch.randn(64, 32), torch.randn(32, 64)

    def views():
        moved = x.movedim(1, 0).view_as(y).expand_as(y)
        return torch.result_type(x, y), x.to(x.dtype), x.contiguous(), moved

    assert profile_calls(views, 1, torch.device("cpu")) == []
    kernels = {k.name for k in profile_calls(lambda: x.t().contiguous().relu_(), 1, torch.device("cpu"))}
    assert "aten::clone" in kernels and "aten::relu_" in kernels and "aten::contiguous" not in kernels


def test_cpu_profile_counts_operators_in_ranges_custom_ops_and_other_threads_once():
    a, b = torch.randn(64, 128), torch.randn(128, 32)

    def forward():
        with torch.profiler.record_function("hidden"):
            h = a @ b  # aten::matmul, with aten::mm under it
        worker = threading.Thread(target=lambda: torch.sigmoid(h))
        worker.start()
        worker.join()
        return torch.relu(h)

    kernels = {k.name: k for k in profile_calls(forward, 1, torch.device("cpu"))}
    assert {"aten::matmul", "aten::sigmoid", "aten::relu"} <= set(kernels)
    assert "aten::mm" not in kernels  # charged to aten::matmul, which called it


def test_callers_read_from_raw_events_are_those_of_torch_profilers_event_tree():
    # The CPU model nests Kineto's raw events itself (building torch.profiler's tree was as slow
    # as the profiled calls); it must find the callers that tree finds.
    a, b = torch.randn(64, 128), torch.randn(128, 32)

    def forward():
        with torch.profiler.record_function(JUDGE_RANGE):
            torch.nn.functional.linear(a, b.T).sum()
        with torch.profiler.record_function("outer"), torch.profiler.record_function("inner"):
            h = torch.relu(a @ b)
        worker = threading.Thread(target=lambda: torch.sigmoid(h).mean())
        worker.start()
        worker.join()
        return h + 1

    with kineto_profile(torch.device("cpu"), shapes_and_flops=True, every_thread=True) as prof:
        forward()

    def chain(event):
        names = []
        while event.cpu_parent is not None:
            event = event.cpu_parent
            names.append(event.name)
        return names

    def collapsed(names):  # the tree merges an operator into its caller of the same name
        return tuple(name for i, name in enumerate(names) if i == 0 or names[i - 1] != name)

    from_tree = sorted((e.name, e.thread, collapsed(chain(e))) for e in prof.function_events)
    from_raw = sorted(
        (e.name(), e.start_thread_id(), collapsed([c.name() for c in callers]))
        for e, callers in _with_callers(prof.kineto_results.events())
        if not callers or callers[0].name() != e.name()
    )
    assert len(from_raw) == len(from_tree) > 10
    assert from_raw == from_tree
    assert any(c[:2] == ("inner", "outer") for _, _, c in from_raw)


def test_cpu_profile_leaves_out_only_the_interpreters_copies_inside_a_launch_range():
    x, y = torch.randn(1024), torch.randn(1024)

    def launch():
        with torch.profiler.record_function(TRITON_RANGE_PREFIX + "kernel"):
            x.copy_(y)  # what the interpreter does with each argument after the programs ran
            torch.exp(x)  # what a kernel body could hide

    kernels = {k.name for k in profile_calls(launch, 1, torch.device("cpu"))}
    assert "aten::exp" in kernels and "aten::copy_" not in kernels


def test_cpu_profile_charges_what_runs_nested_in_the_interpreters_copies():
    """A dispatch mode of the candidate's can turn the interpreter's copy-back (left out) into a
    matrix product: that is charged as if called at top level, and the judge's own operators stay
    left out with what they call."""
    a, b = torch.randn(128, 256), torch.randn(256, 64)
    out = torch.empty(128, 64)

    class CopyIsMatmul(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is torch.ops.aten.copy_.default:
                return torch.mm(a, b, out=args[0])
            return func(*args, **(kwargs or {}))

    def launch():
        with torch.profiler.record_function(TRITON_RANGE_PREFIX + "kernel"), CopyIsMatmul():
            out.copy_(a)
        with torch.profiler.record_function(JUDGE_RANGE), CopyIsMatmul():
            out.copy_(a)

    kernels = profile_calls(launch, 1, torch.device("cpu"))
    assert kernels == profile_calls(lambda: torch.mm(a, b, out=out), 1, torch.device("cpu"))
    assert [(k.name, k.launches) for k in kernels] == [("aten::mm", 1)]


def test_judged_profiles_count_the_ranges_only_the_judge_may_name():
    """Ranges, not operators: an operator of a library a candidate named "triton" is no launch."""
    x = torch.randn(64)
    library = torch.library.Library("triton", "FRAGMENT")
    library.define("drkernel_test_relu(Tensor x) -> Tensor")
    library.impl("drkernel_test_relu", torch.relu, "CPU")

    def call():
        with torch.profiler.record_function(JUDGE_RANGE):
            torch.relu(x)
        for name in ("kernel", "other"):
            with torch.profiler.record_function(TRITON_RANGE_PREFIX + name):
                torch.exp(x)
        torch.ops.triton.drkernel_test_relu(x)

    traffic = {"kernel": (1, 512, 0)}
    _, ranges = profile_judged_calls(call, 2, torch.device("cpu"), lambda: traffic)
    assert ranges == RangeCounts(judge=2, triton=4, launches=1)


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "cuda",
            marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")],
        ),
    ],
)
def test_work_inside_the_judges_range_is_left_out_of_the_profile(device: str) -> None:
    """The sandbox's own snapshots inside a profiled call (candidate/harness.py, quiet) are not
    the candidate's PyTorch work: operators, and on a GPU the kernels they launch, are left out."""
    x = torch.randn(256, 512, device=device)

    def call() -> None:
        y = torch.relu(x)
        with torch.profiler.record_function(JUDGE_RANGE):
            torch.sigmoid(y.clone())

    with_judge = profile_calls(call, 1, torch.device(device))
    alone = profile_calls(lambda: torch.relu(x), 1, torch.device(device))
    assert sorted((k.name, k.launches) for k in with_judge) == sorted((k.name, k.launches) for k in alone)


class _Event:
    """Stands in for a Kineto event (named fake: CUDA activity needs a GPU): each accessor
    ``_device_kernels`` reads returns the value given here."""

    def __init__(
        self,
        device: DeviceType,
        name: str,
        *,
        thread: int = 1,
        start: int = 0,
        end: int = 0,
        correlation: int = 0,
        linked: int = 0,
        annotation: bool = False,
    ) -> None:
        values = {
            "device_type": device,
            "name": name,
            "start_thread_id": thread,
            "start_ns": start,
            "end_ns": end,
            "duration_ns": end - start,
            "correlation_id": correlation,
            "linked_correlation_id": linked,
            "is_user_annotation": annotation,
        }
        for accessor, value in values.items():
            setattr(self, accessor, lambda value=value: value)


def test_device_time_leaves_out_what_operators_inside_the_judges_ranges_launched():
    cpu, cuda = DeviceType.CPU, DeviceType.CUDA
    events = [
        _Event(cpu, JUDGE_RANGE, thread=1, start=100, end=200),
        _Event(cpu, JUDGE_RANGE, thread=1, start=150, end=300),  # overlapping: one span to 300
        _Event(cpu, "aten::ne", thread=1, start=250, end=260, correlation=7),  # inside
        _Event(cpu, "relu_kernel", thread=1, start=400, end=410, correlation=8),  # after the ranges
        _Event(cpu, "aten::add", thread=2, start=150, end=160, correlation=9),  # another thread
        _Event(cuda, "ne_kernel", start=1000, end=6000, linked=7),
        _Event(cuda, "relu_kernel", start=2000, end=5000, linked=8),
        _Event(cuda, "relu_kernel", start=6000, end=9000, linked=8),
        _Event(cuda, "add_kernel", start=3000, end=4000, linked=9),
        _Event(cuda, JUDGE_RANGE, start=1000, end=9000, annotation=True),
    ]
    kernels = {k.name: (k.launches, k.time_us) for k in _device_kernels(events)}
    assert kernels == {"relu_kernel": (2, 6.0), "add_kernel": (1, 1.0)}
