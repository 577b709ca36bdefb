"""Comparing candidate outputs with reference outputs.

An output passes when it has the expected shape and dtype, is finite wherever the reference
is, every element satisfies ``|c - r| <= atol + rtol * |r|`` and the relative L2 error
``||c - r|| / ||r||`` stays under the dtype's bound. Integer and boolean outputs must match
exactly; complex outputs are compared as their real and imaginary parts. Errors are
accumulated in float64, chunk by chunk, so that no output needs a temporary of its full size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch

from services.sandbox.settings import Tolerance

# Elements compared at a time: every temporary is a float64 copy of one chunk (about a dozen
# at once). On a CPU small chunks stay in cache (32M float32 elements on one thread, as the
# judge runs: 1.1 s and 53 MiB more with 2**18, 8.4 s and 1.3 GiB with 2**24); a GPU gets
# long kernels.
_CHUNK_ELEMENTS = {"cpu": 1 << 18, "cuda": 1 << 26}


@dataclass(frozen=True)
class Comparison:
    """The outcome for all outputs of one run."""

    passed: bool
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    rel_l2_error: float = 0.0
    message: str = ""
    # failed by the relative-L2 bound alone (every element within tolerance): a precision
    # question that a float64 run of the reference can settle (``exact`` below)
    norm_only: bool = False


@dataclass
class _Errors:
    max_abs: float = 0.0
    max_rel: float = 0.0
    diff_sq: float = 0.0
    ref_sq: float = 0.0
    outside: int = 0
    nonfinite: int = 0
    first_bad: int = -1


def _blocks(
    shape: Sequence[int], limit: int, prefix: tuple[int | slice, ...] = ()
) -> Iterator[tuple[int | slice, ...]]:
    """Indices cutting a tensor of ``shape`` into consecutive row-major blocks of at most
    ``limit`` elements (flattening a block copies at most that much, even when the whole
    tensor is not contiguous)."""
    if math.prod(shape) <= limit:
        yield prefix
        return
    row = math.prod(shape[1:])
    if row <= limit:
        step = limit // row
        for start in range(0, shape[0], step):
            yield (*prefix, slice(start, start + step))
        return
    for index in range(shape[0]):
        yield from _blocks(shape[1:], limit, (*prefix, index))


def _chunks(
    candidate: torch.Tensor, reference: torch.Tensor, dtype: torch.dtype | None = torch.float64
) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    """(flat offset, candidate chunk, reference chunk) on the reference's device, in ``dtype``
    (None: the candidate's), one chunk at a time: no full-size copy of either."""
    limit = _CHUNK_ELEMENTS.get(reference.device.type, _CHUNK_ELEMENTS["cpu"])
    target = dtype or candidate.dtype
    start = 0
    for index in _blocks(tuple(reference.shape), limit):
        r = reference[index].reshape(-1).to(target)
        yield start, candidate[index].reshape(-1).to(reference.device, target), r
        start += r.numel()


def equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape, dtype, device and values (NaN equals nothing), one chunk at a time: no
    full-size temporary next to large outputs."""
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    return all(torch.equal(x, y) for _, x, y in _chunks(a, b, None))


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


def _statistics(candidate: torch.Tensor, reference: torch.Tensor, atol: float, rtol: float) -> _Errors:
    """All error statistics, kept on the device until the end (one sync): in one lean pass
    while both are finite, the common case (about a third of the kernels of the full rules),
    else under the full rules for NaN and infinities (``_outside``)."""
    return _finite_errors(candidate, reference, atol, rtol) or _all_errors(candidate, reference, atol, rtol)


def _accumulate(candidate: torch.Tensor, reference: torch.Tensor, atol: float, rtol: float) -> _Errors:
    """The error statistics and the index of the first element outside the tolerance."""
    errors = _statistics(candidate, reference, atol, rtol)
    if errors.outside:
        for start, c, r in _chunks(candidate, reference):
            outside = _outside(c, r, atol, rtol)[0]
            if bool(outside.any()):
                errors.first_bad = start + int(outside.nonzero()[0, 0])
                break
    return errors


def _finite_errors(candidate: torch.Tensor, reference: torch.Tensor, atol: float, rtol: float) -> _Errors | None:
    """The statistics when every difference is finite (None otherwise: then some value is
    NaN or infinite, or a difference overflows, and the full rules decide)."""

    def chunk_stats(c: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, ...]:
        diff = torch.sub(c, r).abs_()
        magnitude = r.abs()
        rel = torch.div(diff, magnitude).nan_to_num_(0.0, 0.0, 0.0)  # 0 where the reference is 0
        outside = torch.gt(diff, magnitude.mul_(rtol).add_(atol)).sum(dtype=torch.float64)
        nonfinite = torch.isfinite(diff).logical_not_().sum(dtype=torch.float64)
        return diff, rel, torch.dot(diff, diff), torch.dot(r, r), outside, nonfinite

    errors = _errors(candidate, reference, chunk_stats)
    return None if errors.nonfinite else errors


def _all_errors(candidate: torch.Tensor, reference: torch.Tensor, atol: float, rtol: float) -> _Errors:
    """The statistics under the full rules for non-finite values (``_outside``)."""

    def chunk_stats(c: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, ...]:
        outside, bad_values, diff, magnitude = _outside(c, r, atol, rtol)
        rel = torch.where(magnitude > 0, diff / torch.where(magnitude > 0, magnitude, 1.0), torch.zeros_like(diff))
        squares = ((diff * diff).sum(), (magnitude * magnitude).sum())
        return diff, rel, *squares, outside.sum(dtype=torch.float64), bad_values.sum(dtype=torch.float64)

    return _errors(candidate, reference, chunk_stats)


def _errors(
    candidate: torch.Tensor,
    reference: torch.Tensor,
    chunk_stats: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, ...]],
) -> _Errors:
    """Statistics over every chunk, merged on the device (one sync at the end): ``chunk_stats``
    gives a chunk's absolute and relative differences, then its sums of squared differences
    and of the squared reference, and its counts of elements outside the tolerance and of
    non-finite ones."""
    stats = torch.zeros(6, dtype=torch.float64, device=reference.device)
    for _, c, r in _chunks(candidate, reference):
        diff, rel, *sums = chunk_stats(c, r)
        maxima = [t.max() if t.numel() else t.new_zeros(()) for t in (diff, rel)]
        chunk = torch.stack([*maxima, *sums])
        stats = torch.cat([torch.maximum(stats[:2], chunk[:2]), stats[2:] + chunk[2:]])
    max_abs, max_rel, diff_sq, ref_sq, outside_count, nonfinite = stats.tolist()
    return _Errors(max_abs, max_rel, diff_sq, ref_sq, int(outside_count), int(nonfinite))


def _index(flat: int, shape: Sequence[int]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat % size if size else 0)
        flat //= max(size, 1)
    return tuple(reversed(index))


def _l2_against_exact(candidate: torch.Tensor, reference: torch.Tensor, exact: torch.Tensor) -> tuple[float, ...]:
    """(||c - x||, ||x||, ||r - x||) for the exact (float64) outputs x, chunk by chunk."""
    sums = torch.zeros(3, dtype=torch.float64, device=exact.device)
    for (_, c, x), (_, r, _) in zip(_chunks(candidate, exact), _chunks(reference, exact), strict=True):
        finite = torch.isfinite(x)
        c, r, x = (torch.where(finite, t, torch.zeros_like(t)) for t in (c, r, x))
        sums += torch.stack([((c - x) ** 2).sum(), (x * x).sum(), ((r - x) ** 2).sum()])
    return tuple(math.sqrt(v) for v in sums.tolist())


def compare_outputs(
    candidate: Sequence[torch.Tensor],
    reference: Sequence[torch.Tensor],
    expected_dtypes: Sequence[torch.dtype],
    tolerance: Tolerance,
    exact: Sequence[torch.Tensor] | None = None,
) -> Comparison:
    """Compares output lists; the message names the first output that fails and why.

    ``exact``: the reference's outputs computed in float64 from the same values. The L2
    bound is then taken against them, and the reference's own rounding error is forgiven:
    ``||c - x|| <= max_rel_l2 * ||x|| + ||r - x||``. A candidate is never failed for being
    closer to the exact answer than the reference is (an output whose exact value is 0, where
    the reference holds only rounding noise)."""
    if len(candidate) != len(reference):
        return Comparison(False, message=f"forward returned {len(candidate)} output(s), expected {len(reference)}")
    worst = Comparison(True)
    for index, (got, want, dtype) in enumerate(zip(candidate, reference, expected_dtypes, strict=False)):
        label = f"output {index}" if len(reference) > 1 else "the output"
        if tuple(got.shape) != tuple(want.shape):
            return Comparison(False, message=f"{label} has shape {tuple(got.shape)}, expected {tuple(want.shape)}")
        if got.dtype != dtype:
            return Comparison(False, message=f"{label} has dtype {got.dtype}, expected {dtype}")
        if got.is_meta:
            return Comparison(False, message=f"{label}: its values were not received")
        if want.is_complex():  # compared part by part (in float64 the imaginary part would vanish)
            got, want = torch.view_as_real(got), torch.view_as_real(want)
        if not (want.is_floating_point() or want.is_complex()):
            mismatches = sum(int((c != r).sum()) for _, c, r in _chunks(got, want, None))
            if mismatches:
                return Comparison(
                    False, message=f"{label}: {mismatches} of {want.numel()} elements differ (exact match required)"
                )
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
        if exact is not None:
            error, exact_norm, reference_error = _l2_against_exact(got, want, exact[index])
            too_far = error > tolerance.max_rel_l2 * exact_norm + reference_error
        else:
            too_far = rel_l2 > tolerance.max_rel_l2
        if too_far:
            return _failed(
                worst,
                f"{label}: relative L2 error {rel_l2:.3g} exceeds {tolerance.max_rel_l2:g} "
                "(precision lower than the task's dtype allows)",
                norm_only=True,
            )
    return worst


def _failed(worst: Comparison, message: str, norm_only: bool = False) -> Comparison:
    return Comparison(False, worst.max_abs_error, worst.max_rel_error, worst.rel_l2_error, message, norm_only)


def moved_share(
    candidate: Sequence[torch.Tensor],
    reference: Sequence[torch.Tensor],
    expected_dtypes: Sequence[torch.dtype],
    tolerance: Tolerance,
) -> float:
    """The share of all output elements that are not what the reference has (beyond the
    tolerance, or unequal for integers and booleans); 1.0 for outputs of the wrong number,
    shape or dtype. A knock-out call reads from it how much of the output its kernels made.

    The absolute tolerance shrinks, for an output whose values are far smaller than it, to the
    relative L2 bound's share of the output's root mean square: every value of a softmax over
    2048 columns lies within atol of anything, and a kernel result normalised by PyTorch moves
    it by less than atol however it is replaced, yet the output is wrong (the norm says so)."""
    if len(candidate) != len(reference):
        return 1.0
    moved = total = 0
    for got, want, dtype in zip(candidate, reference, expected_dtypes, strict=False):
        total += want.numel()
        if tuple(got.shape) != tuple(want.shape) or got.dtype != dtype or got.is_meta:
            moved += want.numel()
            continue
        if want.is_complex():
            got, want = torch.view_as_real(got), torch.view_as_real(want)
        if not (want.is_floating_point() or want.is_complex()):
            moved += sum(int((c != r).sum()) for _, c, r in _chunks(got, want, None))
            continue
        atol = min(tolerance.atol, tolerance.max_rel_l2 * _rms(want))
        moved += _statistics(got, want, atol, tolerance.rtol).outside
    return moved / total if total else 0.0


def _rms(tensor: torch.Tensor) -> float:
    """The root mean square of a tensor's finite values (0 when it has none)."""
    sums = torch.zeros(2, dtype=torch.float64, device=tensor.device)
    for _, values, _ in _chunks(tensor, tensor):
        finite = torch.isfinite(values)
        kept = torch.where(finite, values, 0.0)
        sums += torch.stack([torch.dot(kept, kept), finite.sum(dtype=torch.float64)])
    squares, count = sums.tolist()
    return math.sqrt(squares / count) if count else 0.0


def close_at(values: torch.Tensor, reference: torch.Tensor, positions: torch.Tensor, tolerance: Tolerance) -> bool:
    """Whether ``values`` are the reference's at the flat ``positions`` (within the tolerance;
    exactly for integers and booleans), the reference not holding one value there."""
    if positions.numel() == 0 or int(positions.max()) >= reference.numel() or reference.is_complex():
        return False
    wanted = torch.take(reference, positions.to(reference.device)).to(torch.float64).cpu()
    if bool((wanted == wanted[0]).all()):
        return False
    if not reference.is_floating_point():
        return bool((values == wanted).all())
    return not bool(_outside(values, wanted, tolerance.atol, tolerance.rtol)[0].any())
