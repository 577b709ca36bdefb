"""Whether a launch only moved another tensor's values into the tensor it wrote: a crop, a
strided slice, a transpose or a broadcast of an argument of another size, or rows taken whole
from a result made in the same call. (Copies of an argument of as many elements, rescaled or
reordered, are work.py's.)

A kernel that moves PyTorch's result into the output does none of the output's work. Red-team
probes had PyTorch or NumPy compute the output on inputs padded by a row, a column or one
element, doubled, or padded and rolled, so that no result had the output's size, and a kernel
copy the output's part of it, whole or in two launches, through a 16-bit round trip or not:
`CORRECT` with coverage 0.14 to 1.0 (the NumPy one earned an honest kernel's reward).

How: positions are drawn among the elements the launch changed, half of them each with its
neighbour in the same row. Their values (but for values drawn many times, such as a ReLU's
zeros) are looked up in the argument in one pass over it in chunks, its values rounded to the
written dtype, or through a 16-bit dtype when every written value survives that round trip;
those found once there, or else up to MAX_FOUND_TIMES times (at their first or their last
occurrence), or else pinned by their neighbour (of the occurrences of two neighbours' values,
the one pair as far apart as they are: a 16-bit round trip of a large result repeats every
value), give pairs of (position in the written tensor, position in the argument). The
written tensor is a moved copy where one affine map (an offset and an integer stride per
dimension, found by least squares and checked exactly) takes every pair's first to its second,
or, for an argument made in this call, where each row's pairs share one offset (rows gathered
in any fixed order: a weight's rows gathered by index, an embedding, are the task's work), and
the argument holds the written values at the mapped positions for ``share`` of them. A
selection that depends on the data (a max-pool, a top-k, a sort, a ReLU's zeros) follows no
such map and stays work; so does a rescaled crop (``a * x + b`` of another size), which this
does not look for. Every tensor operation here is captured when the module is imported, before
candidate code runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

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
_where = torch.where
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

# Positions drawn in the written tensor (half of them, each with its neighbour in the same
# row), and how many of them must be located in the argument.
DRAWN = 256
MIN_LOCATED = 32
# The argument is scanned in pieces of this many elements; one holding more matches than
# MAX_MATCHES_PER_DRAWN per drawn value repeats the values too often to say where they came from.
_CHUNK = 1 << 25
MAX_MATCHES_PER_DRAWN = 64
# A value drawn more often than this fills much of the written tensor (a ReLU's zeros) and is
# not looked up; a broadcast repeats each value a few times among the drawn ones.
MAX_DRAWN_TIMES = 8
# A value found in the argument up to this many times (a result computed on the input twice
# over) is located at its first or at its last occurrence, each tried in turn after the
# values found once only.
MAX_FOUND_TIMES = 4
# Changed elements drawn from a launch that changed only part of a tensor are listed first: not
# beyond this many (a launch that changed less of a larger tensor is left to the other checks).
_MAX_LISTED = 1 << 24


def _flat_chunks(tensor: torch.Tensor) -> Iterator[tuple[int, torch.Tensor]]:
    flat = _reshape(_detach(tensor), (-1,))
    count = bits.numel(flat)
    for start in range(0, count, _CHUNK):
        yield start, _narrow(flat, 0, start, min(_CHUNK, count - start))


def _locate(
    keys: torch.Tensor, source: torch.Tensor, lookup: torch.dtype, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor]] | None:
    """For each of ``keys`` (sorted, distinct), how often it occurs in ``source`` (its values
    rounded to ``lookup``, then cast to ``dtype``), where it first does and where it last does
    (flat), and every occurrence (values, positions); None when the keys occur too often or
    not at all. (No bincount or index_put: CUDA's are not deterministic, and checked calls
    run with deterministic algorithms, warning at each use.)"""
    found, where = [], []
    limit = MAX_MATCHES_PER_DRAWN * bits.numel(keys)
    total = 0
    for start, chunk in _flat_chunks(source):
        values = _to(_to(chunk, lookup), dtype)
        hits = _reshape(_nonzero(_isin(values, keys)), (-1,))
        total += bits.numel(hits)
        if total > limit:
            return None
        found.append(_take(values, hits))
        where.append(_add(hits, start))
    values, positions = _cat(found), _cat(where)
    if not bits.numel(values):
        return None
    ordered, order = _sort(values, stable=True)  # equal values keep their positions' order
    first = _searchsorted(ordered, keys)
    after = _searchsorted(ordered, keys, right=True)
    last_index = bits.numel(ordered) - 1
    at_first = _take(positions, _take(order, _clamp(first, max=last_index)))
    at_last = _take(positions, _take(order, _clamp(_sub(after, 1), min=0, max=last_index)))
    return _sub(after, first), at_first, at_last, (values, positions)


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


def _drawn(
    tensor: torch.Tensor, count: int, mask: torch.Tensor | None, generator: torch.Generator, share: float
) -> torch.Tensor | None:
    """Flat positions to look at: changed ones (of all when nearly all changed), half of them
    drawn and each of those with its neighbour in its row (a row copied whole shows its
    stride); None when too little or too much of a large tensor changed to list."""
    size, device = bits.numel(tensor), bits.device(tensor)
    width = bits.shape(tensor)[-1] if bits.shape(tensor) else 1
    if count >= share * size or mask is None:
        drawn = _randint(0, size, (DRAWN // 2,), generator=generator, device=device)
    elif count <= _MAX_LISTED:
        changed = _reshape(_nonzero(_reshape(mask, (-1,))), (-1,))
        drawn = _take(changed, _randint(0, count, (DRAWN // 2,), generator=generator, device=device))
    else:
        return None
    column = _remainder(drawn, width)
    neighbour = _where(_lt(_add(column, 1), width), _add(drawn, 1), _sub(drawn, 1)) if width > 1 else drawn
    return _cat([drawn, _clamp(neighbour, min=0, max=size - 1)])


def _rows_fit(drawn: torch.Tensor, paired: torch.Tensor, target: torch.Tensor, width: int) -> torch.Tensor | None:
    """Where each drawn position comes from when every row of the written tensor is a run of
    the argument's elements (each row from its own place: rows gathered in any fixed order),
    judged on the rows with two or more paired positions (-1 for the others); None when the
    pairs disagree or too few rows tell."""
    positions, sources = bits.values(_masked_select(drawn, paired)), bits.values(target)
    offsets: dict[int, int] = {}
    for position, source in zip(positions, sources, strict=True):
        row, offset = position // width, source - position % width
        if offsets.setdefault(row, offset) != offset:
            return None
    told = {row for row, pairs in Counter(p // width for p in positions).items() if pairs > 1}
    if 2 * len(told) < MIN_LOCATED:
        return None
    mapped = [offsets[p // width] + p % width if p // width in told else -1 for p in bits.values(drawn)]
    return _tensor(mapped, dtype=_int64, device=bits.device(drawn))


def moved_source(
    tensor: torch.Tensor,
    count: int,
    mask: torch.Tensor | None,
    sources: list[tuple[torch.Tensor, torch.Tensor]],
    generator: torch.Generator,
    share: float,
    made_in_call: Callable[[torch.Tensor], bool],
) -> torch.Tensor | None:
    """The argument of another size whose values (each source is an argument and its values
    before the launch: a launch may scribble on its source) the changed elements of
    ``tensor`` hold at positions one affine map of its index gives (or, for an argument
    ``made_in_call``, rows taken whole from anywhere in it), at ``share`` of the positions
    drawn with ``generator`` (module docstring), or None."""
    size = bits.numel(tensor)
    if count < MIN_LOCATED or not bits.is_floating_point(tensor) or bits.is_complex(tensor):
        return None
    candidates = [
        (argument, values)
        for argument, values in sources
        if bits.numel(values) != size and bits.is_floating_point(values) and not bits.is_complex(values)
    ]
    drawn = _drawn(tensor, count, mask, generator, share) if candidates else None
    if drawn is None:
        return None
    device, dtype, shape = bits.device(tensor), bits.dtype(tensor), tuple(bits.shape(tensor))
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
    width = shape[-1] if shape else 1
    lookups = _lookups(written, finite, dtype)
    for argument, source in candidates:
        for lookup in lookups:
            located = _locate(keys, source, lookup, dtype)
            if located is None:
                continue
            for paired, target in _pairings(located, drawn, written, is_key, key_of):
                if int(bits.item(_count(paired))) < MIN_LOCATED:
                    continue
                maps = [_affine_fit(design, paired, target, device)]
                if made_in_call(argument) and width > 1:
                    maps.append(_rows_fit(drawn, paired, target, width))
                for mapped in maps:
                    if mapped is not None and _holds(source, mapped, written, finite, lookup, dtype, share):
                        return argument
    return None


def _pairings(
    located: tuple[torch.Tensor, torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor]],
    drawn: torch.Tensor,
    written: torch.Tensor,
    is_key: torch.Tensor,
    key_of: torch.Tensor,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Ways to pair drawn positions with positions in the argument, each tried in turn (which
    drawn positions are paired, and where those are): values found there once; up to
    MAX_FOUND_TIMES times, at their first occurrence, then at their last; last, values
    repeated too often, pinned by their neighbours (``_pinned``)."""
    counts, at_first, at_last, hits = located
    once = _eq(counts, 1)
    found = _logical_and(_ge(counts, 1), _le(counts, MAX_FOUND_TIMES))
    for at, usable in ((at_first, once), (at_first, found), (at_last, found)):
        paired = _logical_and(is_key, _take(usable, key_of))
        yield paired, _masked_select(_take(at, key_of), paired)
    pinned = _pinned(drawn, written, is_key, hits)
    if pinned is not None:
        yield pinned


def _pinned(
    drawn: torch.Tensor, written: torch.Tensor, is_key: torch.Tensor, hits: tuple[torch.Tensor, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Positions located through each drawn position's neighbour in its row, for values the
    argument holds many times (a 16-bit round trip of a large result): of the occurrences of
    the two values, the one pair that lies as far apart in the argument as the two lie in
    the written tensor. None when too few pairs tell."""
    occurrences: dict[float, list[int]] = {}
    for value, position in zip(bits.values(hits[0]), bits.values(hits[1]), strict=True):
        occurrences.setdefault(value, []).append(position)
    positions, values, keyed = bits.values(drawn), bits.values(written), bits.values(is_key)
    half = len(positions) // 2
    located: dict[int, int] = {}
    for first, second in zip(range(half), range(half, 2 * half), strict=True):
        step = positions[second] - positions[first]
        if not (keyed[first] and keyed[second]) or step == 0:
            continue
        then = set(occurrences.get(values[second], ()))
        fits = [p for p in occurrences.get(values[first], ()) if p + step in then]
        if len(fits) == 1:
            located[first], located[second] = fits[0], fits[0] + step
    if len(located) < MIN_LOCATED:
        return None
    device = bits.device(drawn)
    paired = _tensor([index in located for index in range(len(positions))], dtype=_bool, device=device)
    target = _tensor([located[index] for index in sorted(located)], dtype=_int64, device=device)
    return paired, target


def _lookups(written: torch.Tensor, finite: torch.Tensor, dtype: torch.dtype) -> list[torch.dtype]:
    """The dtypes the argument's values may have passed through on their way: the written
    tensor's own, and a 16-bit one whose round trip leaves every written value as it is."""
    lookups = [dtype]
    values = _masked_select(written, finite)
    for narrow in (torch.float16, torch.bfloat16):
        if narrow.itemsize < dtype.itemsize and bits.item(_all(_eq(_to(_to(values, narrow), dtype), values))):
            lookups.append(narrow)
    return lookups


def _affine_fit(
    design: torch.Tensor, paired: torch.Tensor, target: torch.Tensor, device: torch.device
) -> torch.Tensor | None:
    """The flat positions one affine map (least squares, rounded) gives every drawn position,
    when it takes each paired one exactly where it was found; else None."""
    rows = _index_select(design, 0, _reshape(_nonzero(paired), (-1,)))
    solution = _lstsq(_to(rows, "cpu"), _reshape(_to(target, "cpu", _float64), (-1, 1))).solution
    mapped = _to(_reshape(_matmul(design, _to(_round(solution), device)), (-1,)), _int64)
    return mapped if bits.item(_all(_eq(_masked_select(mapped, paired), target))) else None


def _holds(
    source: torch.Tensor,
    mapped: torch.Tensor,
    written: torch.Tensor,
    finite: torch.Tensor,
    lookup: torch.dtype,
    dtype: torch.dtype,
    share: float,
) -> bool:
    """Whether every mapped position (-1: not mapped) lies in the argument and the argument
    holds the written values there (rounded through ``lookup``) for ``share`` of them, at
    least MIN_LOCATED."""
    known = _ge(mapped, 0)
    if not bits.item(_all(_lt(mapped, bits.numel(source)))) or not bits.item(_all(_ge(mapped, -1))):
        return False
    if int(bits.item(_count(known))) < MIN_LOCATED:
        return False
    held = _to(_to(_take(_detach(source), _masked_select(mapped, known)), lookup), dtype)
    wanted, sure = _masked_select(written, known), _masked_select(finite, known)
    same = _logical_or(_eq(held, wanted), _logical_and(_logical_not(sure), _logical_not(_isfinite(held))))
    return int(bits.item(_count(same))) >= share * bits.numel(wanted)
