"""From collected kernel times to a profile: per-call times, the candidate's share, and the
text that tells a model what to fuse next.

A kernel counts as the candidate's own when its name is exactly the name of a Triton kernel
that the sandbox recorded the candidate launching (defined in the candidate's file) during the
profiled calls; no substring matching. Coverage divides device time by device time only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from drkernel.v1 import common_pb2

if TYPE_CHECKING:  # collect imports torch, which a summary never needs
    from services.profiler.collect import KernelTime

_TOP_KERNELS = 3


def kernel_profiles(kernels: Sequence[KernelTime], own: Collection[str], calls: int) -> list[common_pb2.KernelProfile]:
    """Per-call profiles, most time first."""
    profiles = [
        common_pb2.KernelProfile(
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
    candidate: Sequence[common_pb2.KernelProfile],
    reference: Sequence[common_pb2.KernelProfile],
    method: str,
) -> common_pb2.ProfileSummary:
    """The candidate's and reference's profiles with totals and coverage."""
    total = sum(k.device_time_us for k in candidate)
    own = sum(k.device_time_us for k in candidate if k.is_candidate)
    return common_pb2.ProfileSummary(
        kernels=candidate,
        total_device_time_us=total,
        coverage=own / total if total > 0 else 0.0,
        reference_kernels=reference,
        reference_total_device_time_us=sum(k.device_time_us for k in reference),
        method=method,
    )


def bottleneck_text(summary: common_pb2.ProfileSummary) -> str:
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
    return text
