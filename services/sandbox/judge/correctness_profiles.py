"""Correctness profiles: which inputs an evaluation compares, and how closely.

Every profile keeps every defence against reward hacking (own Triton kernels in all four
modes, the proof-of-work checks, tampering, late writes, timed-result checks); they differ only in
the correctness checks, so that drkernel's verdicts can be set side by side with the
published harnesses':

- ``strict`` (default): drkernel's checks from settings (tiny sizes, the task's inputs,
  another seed, scaled values, resized shapes, another precision; per-dtype tolerances with a
  relative-L2 bound).
- ``kernelgym``: Dr. Kernel's KernelGym: five fresh seeds at the task's sizes and dtype,
  ``allclose`` with atol = rtol = 1e-2.
- ``kernelbench``: KernelBench's harness: five trials of the task's own inputs and dtype
  (new seeds), no shrunken or resized runs, its current tolerances (1e-4 for float32, 1e-2
  for float16 and bfloat16).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from services.sandbox.settings import CorrectnessSettings, Tolerance, VariantName
from services.sandbox.shared.evaluation import CorrectnessProfile

_PUBLISHED_TRIALS = 5


@dataclass(frozen=True)
class CorrectnessPlan:
    """What one profile checks."""

    profile: CorrectnessProfile
    variants: tuple[VariantName, ...]
    extra_seeds: int  # further fresh-seed checks at the task's sizes, after the variants
    shrink: bool  # the first run (compile, four modes, knock-out) on shrunken sizes
    tolerances: dict[str, Tolerance]

    @property
    def name(self) -> str:
        return self.profile.name.lower()


def _uniform(atol: float, by_dtype: dict[str, float] | None = None) -> dict[str, Tolerance]:
    names = ("float32", "float64", "float16", "bfloat16")
    return {
        name: Tolerance(
            atol=(by_dtype or {}).get(name, atol), rtol=(by_dtype or {}).get(name, atol), max_rel_l2=math.inf
        )
        for name in names
    }


def plan_for(profile: CorrectnessProfile, settings: CorrectnessSettings) -> CorrectnessPlan:
    """The checks of ``profile`` (UNSPECIFIED takes the configured default)."""
    if profile == CorrectnessProfile.UNSPECIFIED:
        profile = CorrectnessProfile[settings.default_profile.upper()]
    if profile == CorrectnessProfile.KERNELGYM:
        return CorrectnessPlan(profile, ("seed",), _PUBLISHED_TRIALS - 2, False, _uniform(1e-2))
    if profile == CorrectnessProfile.KERNELBENCH:
        tolerances = _uniform(1e-4, {"float16": 1e-2, "bfloat16": 1e-2})
        return CorrectnessPlan(profile, ("seed",), _PUBLISHED_TRIALS - 2, False, tolerances)
    return CorrectnessPlan(CorrectnessProfile.STRICT, settings.variants, 0, True, dict(settings.tolerances))
