"""Comparing candidate outputs with reference outputs.

An output passes when it has the expected shape and dtype, is finite wherever the reference
is, every element satisfies ``|c - r| <= atol + rtol * |r|`` and the relative L2 error
``||c - r|| / ||r||`` stays under the dtype's bound. Integer and boolean outputs must match
exactly. Errors are accumulated in float64, chunk by chunk, so large GPU outputs need no
large temporaries.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from drkernel.config import Tolerance

_CHUNK_ELEMENTS = 1 << 26


@dataclass(frozen=True)
class Comparison:
    """The outcome for all outputs of one run."""

    passed: bool
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    rel_l2_error: float = 0.0
    message: str = ""


@dataclass
class _Errors:
    max_abs: float = 0.0
    max_rel: float = 0.0
    diff_sq: float = 0.0
    ref_sq: float = 0.0
    outside: int = 0
    nonfinite: int = 0
    first_bad: int = -1


def _chunks(candidate: torch.Tensor, reference: torch.Tensor) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    c_flat, r_flat = candidate.reshape(-1), reference.reshape(-1)
    for start in range(0, r_flat.numel(), _CHUNK_ELEMENTS):
        yield (
            start,
            c_flat[start : start + _CHUNK_ELEMENTS].to(torch.float64),
            r_flat[start : start + _CHUNK_ELEMENTS].to(torch.float64),
        )


def _outside(c: torch.Tensor, r: torch.Tensor, atol: float, rtol: float) -> tuple[torch.Tensor, ...]:
    c_finite, r_finite = torch.isfinite(c), torch.isfinite(r)
    # NaN/Inf never passes where the reference is finite; where the reference itself is
    # NaN/Inf the candidate must match it.
    bad_values = ~c_finite & r_finite
    special_mismatch = ~r_finite & ~((c == r) | (torch.isnan(c) & torch.isnan(r)))
    diff = torch.where(c_finite & r_finite, (c - r).abs(), torch.zeros_like(c))
    magnitude = torch.where(r_finite, r.abs(), torch.zeros_like(r))
    outside = (diff > atol + rtol * magnitude) | bad_values | special_mismatch
    return outside, bad_values, diff, magnitude


def _accumulate(candidate: torch.Tensor, reference: torch.Tensor, atol: float, rtol: float) -> _Errors:
    """All error statistics in one pass, kept on the device until the end (one sync)."""
    stats = torch.zeros(6, dtype=torch.float64, device=reference.device)
    for _, c, r in _chunks(candidate, reference):
        outside, bad_values, diff, magnitude = _outside(c, r, atol, rtol)
        rel = torch.where(magnitude > 0, diff / torch.where(magnitude > 0, magnitude, 1.0), torch.zeros_like(diff))
        chunk_stats = torch.stack([
            diff.max() if diff.numel() else diff.new_zeros(()),
            rel.max() if rel.numel() else rel.new_zeros(()),
            (diff * diff).sum(), (magnitude * magnitude).sum(),
            outside.sum(dtype=torch.float64), bad_values.sum(dtype=torch.float64),
        ])
        stats = torch.cat([torch.maximum(stats[:2], chunk_stats[:2]), stats[2:] + chunk_stats[2:]])
    max_abs, max_rel, diff_sq, ref_sq, outside_count, nonfinite = stats.tolist()
    errors = _Errors(max_abs, max_rel, diff_sq, ref_sq, int(outside_count), int(nonfinite))
    if errors.outside:
        for start, c, r in _chunks(candidate, reference):
            outside = _outside(c, r, atol, rtol)[0]
            if bool(outside.any()):
                errors.first_bad = start + int(outside.nonzero()[0, 0])
                break
    return errors


def _index(flat: int, shape: Sequence[int]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat % size if size else 0)
        flat //= max(size, 1)
    return tuple(reversed(index))


def compare_outputs(
    candidate: Sequence[torch.Tensor],
    reference: Sequence[torch.Tensor],
    expected_dtypes: Sequence[torch.dtype],
    tolerance: Tolerance,
) -> Comparison:
    """Compares output lists; the message names the first output that fails and why."""
    if len(candidate) != len(reference):
        return Comparison(False, message=f"forward returned {len(candidate)} output(s), expected {len(reference)}")
    worst = Comparison(True)
    for index, (got, want, dtype) in enumerate(zip(candidate, reference, expected_dtypes)):
        label = f"output {index}" if len(reference) > 1 else "the output"
        if tuple(got.shape) != tuple(want.shape):
            return Comparison(False, message=f"{label} has shape {tuple(got.shape)}, expected {tuple(want.shape)}")
        if got.dtype != dtype:
            return Comparison(False, message=f"{label} has dtype {got.dtype}, expected {dtype}")
        got = got.to(want.device)
        if not (want.is_floating_point() or want.is_complex()):
            if not torch.equal(got, want.to(got.dtype)):
                mismatches = int((got != want.to(got.dtype)).sum())
                return Comparison(False, message=f"{label}: {mismatches} of {want.numel()} elements differ (exact match required)")
            continue
        errors = _accumulate(got, want, tolerance.atol, tolerance.rtol)
        rel_l2 = math.sqrt(errors.diff_sq / errors.ref_sq) if errors.ref_sq > 0 else math.sqrt(errors.diff_sq)
        worst = Comparison(
            True,
            max(worst.max_abs_error, errors.max_abs),
            max(worst.max_rel_error, errors.max_rel),
            max(worst.rel_l2_error, rel_l2),
        )
        if errors.nonfinite:
            return _failed(worst, f"{label} contains {errors.nonfinite} NaN/Inf value(s) where the reference is finite")
        if errors.outside:
            where = _index(errors.first_bad, want.shape)
            return _failed(
                worst,
                f"{label}: {errors.outside} of {want.numel()} elements differ beyond atol={tolerance.atol:g} "
                f"rtol={tolerance.rtol:g} (max abs error {errors.max_abs:.3g}; first at index {where})",
            )
        if rel_l2 > tolerance.max_rel_l2:
            return _failed(
                worst,
                f"{label}: relative L2 error {rel_l2:.3g} exceeds {tolerance.max_rel_l2:g} "
                "(precision lower than the task's dtype allows)",
            )
    return worst


def _failed(worst: Comparison, message: str) -> Comparison:
    return Comparison(False, worst.max_abs_error, worst.max_rel_error, worst.rel_l2_error, message)
