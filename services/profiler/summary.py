"""From collected kernel times to a profile: per-call times, the candidate's share, and the
text that tells a model what to fuse next.

A kernel counts as the candidate's own when its name is exactly the name of a Triton kernel
that the sandbox recorded the candidate launching (defined in the candidate's file) during the
profiled calls; no substring matching. Coverage divides device time by device time only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from drkernel.v1 import common_pb2

if TYPE_CHECKING:  # collect imports torch, which a summary never needs
    from services.profiler.collect import KernelTime

_TOP_KERNELS = 3


@dataclass(frozen=True)
class KernelProfile:
    """One kernel's launches and device time per forward call."""

    name: str
    calls: float
    device_time_us: float
    mean_device_time_us: float
    is_candidate: bool


@dataclass(frozen=True)
class ProfileSummary:
    """The candidate's and reference's kernels with totals and coverage (common.proto's
    ProfileSummary, which ``summary_proto`` builds at a service's edge)."""

    kernels: tuple[KernelProfile, ...]
    total_device_time_us: float
    coverage: float
    reference_kernels: tuple[KernelProfile, ...]
    reference_total_device_time_us: float
    method: str
    note: str = ""  # why coverage is less than the own kernels' share of device time


def kernel_profiles(kernels: Sequence[KernelTime], own: Collection[str], calls: int) -> list[KernelProfile]:
    """Per-call profiles, most time first."""
    profiles = [
        KernelProfile(
            name=k.name,
            calls=k.launches / calls,
            device_time_us=k.time_us / calls,
            mean_device_time_us=k.time_us / k.launches if k.launches else 0.0,
            is_candidate=k.name in own,
        )
        for k in kernels
    ]
    return sorted(profiles, key=lambda p: -p.device_time_us)


def profile_summary(
    candidate: Sequence[KernelProfile], reference: Sequence[KernelProfile], method: str
) -> ProfileSummary:
    """The candidate's and reference's profiles with totals and coverage."""
    total = sum(k.device_time_us for k in candidate)
    own = sum(k.device_time_us for k in candidate if k.is_candidate)
    return ProfileSummary(
        kernels=tuple(candidate),
        total_device_time_us=total,
        coverage=own / total if total > 0 else 0.0,
        reference_kernels=tuple(reference),
        reference_total_device_time_us=sum(k.device_time_us for k in reference),
        method=method,
    )


def summary_proto(summary: ProfileSummary) -> common_pb2.ProfileSummary:
    """The summary as common.proto's message."""

    def kernels(profiles: Sequence[KernelProfile]) -> list[common_pb2.KernelProfile]:
        return [
            common_pb2.KernelProfile(
                name=k.name,
                calls=k.calls,
                device_time_us=k.device_time_us,
                mean_device_time_us=k.mean_device_time_us,
                is_candidate=k.is_candidate,
            )
            for k in profiles
        ]

    return common_pb2.ProfileSummary(
        kernels=kernels(summary.kernels),
        total_device_time_us=summary.total_device_time_us,
        coverage=summary.coverage,
        reference_kernels=kernels(summary.reference_kernels),
        reference_total_device_time_us=summary.reference_total_device_time_us,
        method=summary.method,
        note=summary.note,
    )


def summary_from_proto(message: common_pb2.ProfileSummary) -> ProfileSummary:
    """A summary received as common.proto's message."""

    def kernels(profiles: Sequence[common_pb2.KernelProfile]) -> tuple[KernelProfile, ...]:
        return tuple(
            KernelProfile(k.name, k.calls, k.device_time_us, k.mean_device_time_us, k.is_candidate) for k in profiles
        )

    return ProfileSummary(
        kernels=kernels(message.kernels),
        total_device_time_us=message.total_device_time_us,
        coverage=message.coverage,
        reference_kernels=kernels(message.reference_kernels),
        reference_total_device_time_us=message.reference_total_device_time_us,
        method=message.method,
        note=message.note,
    )


def bottleneck_text(summary: ProfileSummary) -> str:
    """Names the kernels that take the time and which of them are still PyTorch's."""
    if not summary.kernels:
        return ""
    parts = [
        f"{k.name} ({'yours' if k.is_candidate else 'PyTorch'}) {k.device_time_us:.3g} us "
        f"({k.device_time_us / summary.total_device_time_us:.0%})"
        for k in summary.kernels[:_TOP_KERNELS]
    ]
    text = (
        f"Profile: {summary.coverage:.0%} of the forward's device time is in your Triton kernels. Top: "
        + ", ".join(parts)
        + "."
    )
    others = [k for k in summary.kernels if not k.is_candidate]
    if others and summary.coverage < 0.8:
        heaviest = max(others, key=lambda k: k.device_time_us)
        text += f" Fuse the work of {heaviest.name} into your kernels to own the bottleneck."
    if summary.note:
        text += f" Coverage counts only work that reaches the output: {summary.note}."
    return text
