"""The profiler's public API for the other services.

Collecting (``profile_calls``, ``kineto_profile``, ``start_cuda_tracing``, ``KernelTime``, ``method``,
``TRITON_RANGE_PREFIX``, ``JUDGE_RANGE``, ``RangeCounts``) needs torch; summarising (``kernel_profiles``,
``profile_summary``, ``bottleneck_text``, the ``ProfileSummary`` they build and
``summary_proto``, which turns it into common.proto's message) does not. Names are imported on
first use, so that a process needing only a summary (the sandbox's server) never pays for
importing torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from services.profiler.collect import (
        JUDGE_RANGE,
        TRITON_RANGE_PREFIX,
        KernelTime,
        RangeCounts,
        kineto_profile,
        method,
        profile_calls,
        profile_judged_calls,
        start_cuda_tracing,
    )
    from services.profiler.summary import (
        KernelProfile,
        ProfileSummary,
        bottleneck_text,
        kernel_profiles,
        profile_summary,
        summary_proto,
    )

_DEFINED_IN = {
    "TRITON_RANGE_PREFIX": "collect",
    "JUDGE_RANGE": "collect",
    "KernelTime": "collect",
    "RangeCounts": "collect",
    "kineto_profile": "collect",
    "method": "collect",
    "profile_calls": "collect",
    "profile_judged_calls": "collect",
    "start_cuda_tracing": "collect",
    "KernelProfile": "summary",
    "ProfileSummary": "summary",
    "bottleneck_text": "summary",
    "kernel_profiles": "summary",
    "profile_summary": "summary",
    "summary_proto": "summary",
}
__all__ = [
    "JUDGE_RANGE",
    "TRITON_RANGE_PREFIX",
    "KernelProfile",
    "KernelTime",
    "ProfileSummary",
    "RangeCounts",
    "bottleneck_text",
    "kernel_profiles",
    "kineto_profile",
    "method",
    "profile_calls",
    "profile_judged_calls",
    "profile_summary",
    "start_cuda_tracing",
    "summary_proto",
]


def __getattr__(name: str) -> Any:
    """Imports the module that defines ``name`` when it is first asked for."""
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
