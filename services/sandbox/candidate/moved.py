"""Whether a launch only moved another tensor's values into the tensor it wrote: a crop, a
strided slice, a transpose or a broadcast of an argument of another size. (Copies of an
argument of as many elements, rescaled or reordered, are work.py's.)

A kernel that moves PyTorch's result into the output does none of the output's work. Red-team
probes had PyTorch or NumPy compute the output on inputs padded by a row, a column or one
element, so that no result had the output's size, and a kernel copy the output's part of it:
`CORRECT` with coverage 0.14 to 1.0 (the NumPy one earned an honest kernel's reward).

How: the values at positions drawn in the written tensor are looked
up in the argument, in one pass over it in chunks (but for values drawn many times, such as
a ReLU's zeros); those found exactly once there give pairs of
(position in the written tensor, position in the argument). Where one affine map (an offset and
an integer stride per dimension of the written tensor, found by least squares and checked
exactly) takes every pair's first to its second, and the argument holds the written values at
the mapped positions for ``share`` of all drawn positions (its values cast to the written
dtype, so a cast moves too), the written tensor is a moved copy. A selection that depends on
the data (a max-pool, a top-k, a ReLU's zeros) follows no such map and stays work. Every
tensor operation here is captured when the module is imported, before candidate code runs.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from services.sandbox.shared import tensor_bits as bits

_TensorBase = torch._C.TensorBase
_detach = _TensorBase.detach
_reshape = _TensorBase.reshape
_narrow = _TensorBase.narrow
_to = _TensorBase.to
_isin = torch.isin
_nonzero = torch.nonzero
_searchsorted = torch.searchsorted
_sort = torch.sort
_take = torch.take
_randint = torch.randint
_isfinite = torch.isfinite
_masked_select = torch.masked_select
_index_select = torch.index_select
_eq = torch.eq
_ne = torch.ne
_ge = torch.ge
_lt = torch.lt
_logical_and = torch.logical_and
_logical_or = torch.logical_or
_logical_not = torch.logical_not
_all = torch.all
_count = torch.count_nonzero
_add = torch.add
_sub = torch.sub
_le = torch.le
_div = torch.div
_remainder = torch.remainder
_clamp = torch.clamp
_matmul = torch.matmul
_cat = torch.cat
_ones = torch.ones
_stack = torch.stack
_tensor = torch.tensor
_lstsq = torch.linalg.lstsq
_round = torch.round
_bool = torch.bool
_float64 = torch.float64
_int64 = torch.int64

# Positions drawn in the written tensor, and how many of them must be located in the argument.
DRAWN = 256
MIN_LOCATED = 32
# The argument is scanned in pieces of this many elements; one holding more matches than
# MAX_MATCHES_PER_DRAWN per drawn value repeats the values too often to say where they came from.
_CHUNK = 1 << 25
MAX_MATCHES_PER_DRAWN = 64
# A value drawn more often than this fills much of the written tensor (a ReLU's zeros) and is
# not looked up; a broadcast repeats each value a few times among the drawn ones.
MAX_DRAWN_TIMES = 8


def _flat_chunks(tensor: torch.Tensor) -> Iterator[tuple[int, torch.Tensor]]:
    flat = _reshape(_detach(tensor), (-1,))
    count = bits.numel(flat)
    for start in range(0, count, _CHUNK):
        yield start, _narrow(flat, 0, start, min(_CHUNK, count - start))


def _locate(keys: torch.Tensor, source: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor] | None:
    """For each of ``keys`` (sorted, distinct), how often it occurs in ``source`` (its values
    cast to ``dtype``) and where it first does (flat); None when the keys occur too often or
    not at all. (No bincount or index_put: CUDA's are not deterministic, and checked calls run
    with deterministic algorithms, warning at each use.)"""
    found, where = [], []
    limit = MAX_MATCHES_PER_DRAWN * bits.numel(keys)
    total = 0
    for start, chunk in _flat_chunks(source):
        values = _to(chunk, dtype)
        hits = _reshape(_nonzero(_isin(values, keys)), (-1,))
        total += bits.numel(hits)
        if total > limit:
            return None
        found.append(_take(values, hits))
        where.append(_add(hits, start))
    values, positions = _cat(found), _cat(where)
    if not bits.numel(values):
        return None
    ordered, order = _sort(values)
    first = _searchsorted(ordered, keys)
    counts = _sub(_searchsorted(ordered, keys, right=True), first)
    at = _take(positions, _take(order, _clamp(first, max=bits.numel(ordered) - 1)))  # used where counts is 1
    return counts, at


def _unravel(flat: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """(positions, dims) indices of flat logical positions in ``shape``."""
    columns, rest = [], flat
    for size in reversed(shape):
        columns.append(_remainder(rest, size))
        rest = _div(rest, size, rounding_mode="floor")
    return _stack(list(reversed(columns)), dim=1)


def _design(index: torch.Tensor | None, rows: int, device: torch.device) -> torch.Tensor:
    """[1, i_0, i_1, ...] per row: an affine map's offset and one stride per dimension."""
    ones = _ones((rows, 1), dtype=_float64, device=device)
    return ones if index is None else _cat([ones, index], dim=1)


def moved_source(
    tensor: torch.Tensor, count: int, sources: list[torch.Tensor], generator: torch.Generator, share: float
) -> torch.Tensor | None:
    """The argument of another size whose values ``tensor`` (``share`` of it written or more)
    holds at positions one affine map of its index gives, at ``share`` of the positions drawn
    with ``generator`` (module docstring), or None."""
    size = bits.numel(tensor)
    if count < share * size or size < MIN_LOCATED or not bits.is_floating_point(tensor) or bits.is_complex(tensor):
        return None
    candidates = [s for s in sources if bits.numel(s) != size and bits.is_floating_point(s) and not bits.is_complex(s)]
    if not candidates:
        return None
    device, dtype, shape = bits.device(tensor), bits.dtype(tensor), tuple(bits.shape(tensor))
    drawn = _randint(0, size, (min(DRAWN, size),), generator=generator, device=device)
    written = _take(_detach(tensor), drawn)
    finite = _isfinite(written)
    ordered = _sort(_masked_select(written, finite)).values
    n = bits.numel(ordered)
    if n < MIN_LOCATED:
        return None
    distinct = _cat(
        [_ones(1, dtype=_bool, device=device), _ne(_narrow(ordered, 0, 1, n - 1), _narrow(ordered, 0, 0, n - 1))]
    )
    keys = _masked_select(ordered, distinct)
    drawn_times = _sub(_searchsorted(ordered, keys, right=True), _searchsorted(ordered, keys))
    keys = _masked_select(keys, _le(drawn_times, MAX_DRAWN_TIMES))  # not a value the tensor is full of
    if bits.numel(keys) < MIN_LOCATED:
        return None
    dims = _tensor([d for d, extent in enumerate(shape) if extent > 1], dtype=_int64, device=device)
    index = _to(_index_select(_unravel(drawn, shape), 1, dims), _float64) if bits.numel(dims) else None
    design = _design(index, bits.numel(drawn), device)
    key_of = _clamp(_searchsorted(keys, written), max=bits.numel(keys) - 1)
    is_key = _logical_and(finite, _eq(_take(keys, key_of), written))
    for source in candidates:
        located = _locate(keys, source, dtype)
        if located is None:
            continue
        counts, at = located
        paired = _logical_and(is_key, _take(_eq(counts, 1), key_of))  # drawn values found once there
        if int(bits.item(_count(paired))) < MIN_LOCATED:
            continue
        target = _masked_select(_take(at, key_of), paired)
        rows = _index_select(design, 0, _reshape(_nonzero(paired), (-1,)))
        solution = _lstsq(_to(rows, "cpu"), _reshape(_to(target, "cpu", _float64), (-1, 1))).solution
        mapped = _to(_reshape(_matmul(design, _to(_round(solution), device)), (-1,)), _int64)
        if not bits.item(_all(_eq(_masked_select(mapped, paired), target))):
            continue
        if not bits.item(_all(_logical_and(_ge(mapped, 0), _lt(mapped, bits.numel(source))))):
            continue
        held = _to(_take(_detach(source), mapped), dtype)
        same = _logical_or(_eq(held, written), _logical_and(_logical_not(finite), _logical_not(_isfinite(held))))
        if int(bits.item(_count(same))) >= share * bits.numel(drawn):
            return source
    return None
