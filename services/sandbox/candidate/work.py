"""Proof of work: what each launch of the candidate's own kernels writes, and, in a knock-out
call, replacing it to see whether the outputs need it.

A launch proves nothing by running: a kernel may store nothing, store back what was there,
fill a buffer with one value, copy an argument, or write into a buffer that is thrown away
while PyTorch computes the returned output. During every checked call (never a timed one)
each launch of the candidate's own kernels is watched: its tensor arguments (tuples and
tensor descriptors included) are remembered before it and compared after it, element by
element, and the launch is recorded as having written ``data``, ``nothing``, a ``constant``
(every tensor it changed now holds one value) or a ``copy`` (every tensor it changed now
equals an argument it left unchanged) (LaunchRecord.wrote). Only ``data`` is work.

Knock-out calls are what prove that the outputs need that data. Nothing in the candidate's
process tells them apart from other checked calls before its first kernel has run: the
wrappers are installed once, before any candidate code, and stay; the Run command is the
same; right after the first launch of each of its own kernels in a call the harness asks the
judge (``order``) whether to replace what that kernel writes during this call. When told to,
every tensor a launch changed is replaced, whole (a kernel may store unchanged values, and
only changed ones can be seen), by different finite values of the same kind: floats move by
0.5 to 1.5 times the tensor's root mean square (at least MIN_SCALE, so that a move always
exceeds the judge's tolerance), all of one tensor's in one direction, drawn per tensor (so
that a sum of them moves too, as when PyTorch adds up a kernel's partial sums: moves of
random signs cancel there), integers move to another value within the tensor's range
(indices stay valid), booleans flip; or, when the judge says so, by zeros (structure that
the kernels' results were made to keep, such as two equal buffers whose difference is added
or rows of one value added before a softmax, survives zeros but not other values). The judge
then counts how much of the output moved (judge/work.py).

A copy need not be bit for bit: a tensor whose values are those of another argument of as
many elements, in any order, rescaled and shifted (``a * s + b``: a cast to another dtype, a
reshape, a transpose, a kernel that halves what PyTorch doubled) holds no information of its
own. Such a rescaled copy is work only when its source is the task's data (a forward input as
the judge gave it, or PyTorch's copy of one: scaling an input is the whole of some tasks) or
the kernels' own results (``Listener.worked``); a copy of anything else (PyTorch's result,
NumPy's, a thread's) is not, and the trace learns where a copy came from (``Listener.copied``).
A launch that only rescaled such a result (a scale other than 1 or a shift) wrote
"rescaled", told apart from a copy: a task may end in a scale of what PyTorch computed.
So is a tensor that holds the values of an argument of another size moved whole: a crop, a
strided slice, a transpose or a broadcast of it, or rows of a result made in the same call
taken in any fixed order (moved.py).

The probe's own tensor work runs through ``quiet`` (no dispatch mode, no profiler sees it)
and with tensor functions and methods captured when this module was imported: a candidate
that replaces ``torch.Tensor.numel``, ``__mul__`` or any other method changes nothing here.
"""

from __future__ import annotations

import inspect
import math
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Literal, Protocol

import torch
from torch.utils._python_dispatch import _disable_current_modes
from triton.tools.tensor_descriptor import TensorDescriptor

from services.sandbox.candidate.bounds import arguments_in, tensors_in
from services.sandbox.candidate.captured import CapturedLaunch, CapturedWork, captured_work
from services.sandbox.candidate.kernel_stores import written_parameters
from services.sandbox.candidate.moved import moved_source
from services.sandbox.shared import tensor_bits as bits
from services.sandbox.shared.tensor_bits import Snapshot, bitwise_equal
from services.sandbox.wire.judge_candidate import Wrote

_TensorBase = torch._C.TensorBase
_detach = _TensorBase.detach
_reshape = _TensorBase.reshape
_to = _TensorBase.to
_copy = _TensorBase.copy_
_ne = torch.ne
_isfinite = torch.isfinite
_logical_not = torch.logical_not
_rand = torch.rand
_randint = torch.randint
_count = torch.count_nonzero
_all = torch.all
_amin = torch.amin
_amax = torch.amax
_aminmax = torch.aminmax
_remainder = torch.remainder
_add = torch.add
_sub = torch.sub
_mul = torch.mul
_abs = torch.abs
_sum = torch.sum
_mean = torch.mean
_sort = torch.sort
_take = torch.take
_narrow = _TensorBase.narrow
_is_contiguous = _TensorBase.is_contiguous
_flip = torch.flip
_masked_select = torch.masked_select
_logical_and = torch.logical_and
_le = torch.le
_bitwise_xor = torch.bitwise_xor
_zeros_like = torch.zeros_like
_zeros = torch.zeros
_view_as_real = torch.view_as_real
_vector_norm = torch.linalg.vector_norm
_nan_to_num = torch.nan_to_num
_float32 = torch.float32
_float64 = torch.float64
_int64 = torch.int64
_bool = torch.bool

# "constant" and "copy" are said of writes this large only: a few elements can coincide.
MIN_ELEMENTS = 64
# Replaced floats move by at least half this (absolute), so that a move is never within the
# judge's tolerances (atol 1e-2 to 2e-2) however small the values written.
MIN_SCALE = 0.25
# A rescaled copy: this share of its values (sorted) within COPY_TOLERANCE of its range of a
# * source + b. A few values off (noise within the judge's tolerance, a clamp that bites
# rarely) leave it a copy; a float16 rounding (5e-4 of a value) stays within the tolerance.
COPY_SHARE = 0.99
# A launch that copied data and wrote less than 1/SCRIBBLE_SHARE as many elements of its own
# (a few values scribbled on the copy's source, a scratch element) did no work: its copy is
# what it did.
SCRIBBLE_SHARE = 100
COPY_TOLERANCE = 1e-3
# The probe's memory stays bounded however large the task's tensors (KernelBench has 7.5 GB
# ones): exact findings and knock-outs go through flat chunks of this many elements (a few
# kernels each: every kernel a checked call launches is recorded by the profiler, whose
# bookkeeping of the 2,000 launches of a 6.4 GB knock-out in 16M-element chunks took 0.5 s),
# and the rescaled-copy fit looks at this many elements drawn at random positions of larger
# tensors.
_CHUNK_ELEMENTS = 1 << 25
_SAMPLE_ELEMENTS = 1 << 22


# What a knock-out puts in place of what the kernels wrote.
Replacement = Literal["values", "zeros"]


class Listener(Protocol):
    """Who hears what the kernels wrote in a checked call (the PyTorch trace)."""

    def written(self, writes: Iterable[tuple[torch.Tensor, int]]) -> None:
        """Tensors the kernels changed, with how many elements each: their own results."""

    def copied(self, copies: Iterable[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Tensors the kernels filled with a (rescaled) copy of another argument, the source."""

    def worked(self, tensor: torch.Tensor) -> bool:
        """Whether ``tensor`` holds the task's data or the kernels' own results."""
        ...

    def used(self, tensors: list[torch.Tensor]) -> None:
        """The tensor arguments of a launch, before it runs."""

    def made_in_call(self, tensor: torch.Tensor) -> bool:
        """Whether a PyTorch operator of this call made ``tensor``, or it entered the call
        from outside PyTorch (not a weight or a table kept from before)."""
        ...

    def replayed(self, work: CapturedWork) -> None:
        """A CUDA graph captured in a checked call was replayed; ``work`` is what it holds."""


class _Unheard:
    """The listener outside checked calls: nothing hears, nothing counts as worked."""

    def written(self, writes: Iterable[tuple[torch.Tensor, int]]) -> None:
        pass

    def copied(self, copies: Iterable[tuple[torch.Tensor, torch.Tensor]]) -> None:
        pass

    def worked(self, tensor: torch.Tensor) -> bool:
        return False

    def used(self, tensors: list[torch.Tensor]) -> None:
        pass

    def made_in_call(self, tensor: torch.Tensor) -> bool:
        return False

    def replayed(self, work: CapturedWork) -> None:
        pass


_UNHEARD = _Unheard()


def _changed(before: torch.Tensor, after: torch.Tensor) -> torch.Tensor | None:
    """Which elements' bits differ (flat, in the tensor's logical order), or None when the
    dtype has no same-size integer view (the caller compares whole tensors)."""
    before_bits, after_bits = bits.as_integers(before), bits.as_integers(after)
    if before_bits is None or after_bits is None:
        return None
    return _reshape(_ne(before_bits, after_bits), (-1,))


class _Argument:
    """A tensor argument of a launch as it was before the launch: an exact copy, or a keyed
    digest when a copy would crowd the device (then only "changed or not" is known)."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = _detach(tensor)
        self._snapshot = Snapshot(self.tensor)
        self._copy = self._snapshot.copy

    @property
    def values_before(self) -> torch.Tensor | None:
        """What it held before the launch, where a copy was kept."""
        return self._copy

    def changed(self) -> tuple[int, torch.Tensor | None]:
        """How many elements changed, and which (flat; None: all of them, when only a digest
        or a whole-tensor comparison tells)."""
        tensor = self.tensor
        if self._copy is not None:
            mask = _changed(self._copy, tensor)
            if mask is not None:
                return int(bits.item(_count(mask))), mask
        return (0 if self._snapshot.unchanged(tensor) else bits.numel(tensor)), None


def _chunks(tensor: torch.Tensor) -> Iterator[torch.Tensor]:
    """``tensor`` flat (logical order) in pieces of at most _CHUNK_ELEMENTS: views of it when
    it is contiguous (writes reach it), else pieces of one flat copy."""
    flat = _reshape(_detach(tensor), (-1,))
    count = bits.numel(flat)
    for start in range(0, count, _CHUNK_ELEMENTS):
        yield _narrow(flat, 0, start, min(_CHUNK_ELEMENTS, count - start))


def _with_whole_storages(unchanged: list[torch.Tensor], changed: list[tuple[torch.Tensor, int]]) -> list[torch.Tensor]:
    """The unchanged arguments, and the whole storage behind each that views only part of
    it: a kernel may read far past a one-element view of a result (the bounds check allows
    the whole storage), so a move from there is looked for there too. Not a storage the
    launch wrote, whose values before the launch are gone."""
    written = {bits.storage(tensor) for tensor, _ in changed}
    found = list(unchanged)
    for tensor in unchanged:
        held = bits.storage(tensor)
        if held is not None and held not in written and bits.nbytes(tensor) < held[1]:
            whole = bits.whole_storage(tensor)
            if all(bits.storage(t) != held or bits.numel(t) != bits.numel(whole) for t in found):
                found.append(whole)
    return found


def _is_constant(tensor: torch.Tensor, count: int, mask: torch.Tensor | None) -> bool:
    """A float tensor (enough of it changed) that now holds one value: throughout, or where
    the launch changed it when it changed nearly all of it. (Which elements a launch changed
    is information: an in-place ReLU changes only the negative elements, all to 0.) Exact, by
    value (-0.0 is 0.0; NaN is no value), chunk by chunk in the tensor's own dtype."""
    if count < MIN_ELEMENTS or not bits.is_floating_point(tensor) or bits.is_complex(tensor):
        return False
    masks = _chunks(mask) if mask is not None and count >= COPY_SHARE * bits.numel(tensor) else None
    value: float | None = None  # the one value seen so far
    for chunk in _chunks(tensor):
        if masks is not None:
            chunk = _masked_select(chunk, next(masks))
        if not bits.numel(chunk):
            continue
        low, high = float(bits.item(_amin(chunk))), float(bits.item(_amax(chunk)))
        if low != high or (value is not None and low != value):  # NaN is never equal
            return False
        value = low
    return value is not None


def _exact_source(tensor: torch.Tensor, count: int, sources: list[torch.Tensor]) -> torch.Tensor | None:
    """The argument whose bits a tensor (enough of it changed) now holds exactly."""
    if count < MIN_ELEMENTS:
        return None
    for source in sources:
        same_kind = bits.shape(source) == bits.shape(tensor) and bits.dtype(source) == bits.dtype(tensor)
        if same_kind and bitwise_equal(source, tensor):
            return source
    return None


def _fits(target: torch.Tensor, source: torch.Tensor) -> tuple[float, float] | None:
    """``(a, b)`` where ``target`` is ``a * source + b`` (least squares, ``a`` not 0) at
    COPY_SHARE of its values, within COPY_TOLERANCE of its range; None where it is not. Pairs
    with a non-finite value are left out: what a checked call never wrote holds NaN
    (deterministic fill)."""
    finite = _logical_and(_isfinite(target), _isfinite(source))
    if int(bits.item(_count(finite))) < MIN_ELEMENTS:
        return None
    target, source = _masked_select(target, finite), _masked_select(source, finite)
    spread = bits.item(_sub(_amax(target), _amin(target)))
    centred = _sub(source, _mean(source))
    scale = bits.item(_sum(_mul(centred, centred)))
    if spread == 0 or scale == 0:
        return None  # one value: the constant finding's, not a copy
    slope = bits.item(_sum(_mul(centred, target))) / scale
    fitted = _add(_mul(centred, slope), _mean(target))
    close = _le(_abs(_sub(target, fitted)), COPY_TOLERANCE * spread)
    if bits.item(_count(close)) < COPY_SHARE * bits.numel(target):
        return None
    return slope, (bits.item(_mean(target)) - slope * bits.item(_mean(source))) / spread


def _identity(fit: tuple[float, float]) -> bool:
    """Whether a fit of ``_fits`` is ``1 * source + 0`` (a cast, a reshape, a transpose: a
    copy), not a rescale."""
    slope, offset = fit
    return abs(slope - 1) <= COPY_TOLERANCE and abs(offset) <= COPY_TOLERANCE


def _rescaled_source(
    tensor: torch.Tensor,
    count: int,
    mask: torch.Tensor | None,
    sources: list[torch.Tensor],
    generator: torch.Generator,
) -> tuple[torch.Tensor, bool] | None:
    """The argument of as many elements whose values a float tensor (enough of it changed)
    now holds up to a scale and a shift (module docstring), and whether it is rescaled (not
    only cast, reshaped or reordered): element for element where the launch changed it,
    when it changed nearly all of it (which elements it changed carries no information
    then), or throughout in any order (the two sorted). Tensors larger than
    _SAMPLE_ELEMENTS are compared at that many positions drawn with ``generator`` (the same
    for the tensor and each source). A kernel that copies part of a tensor is the trace's to
    see: it remembers such sources (``Listener.used``)."""
    if count < MIN_ELEMENTS or not bits.is_floating_point(tensor) or bits.is_complex(tensor):
        return None
    size = bits.numel(tensor)
    candidates = [s for s in sources if bits.numel(s) == size and not bits.is_complex(s)]
    if not candidates:
        return None
    positions = (
        _randint(0, size, (_SAMPLE_ELEMENTS,), generator=generator, device=bits.device(tensor))
        if size > _SAMPLE_ELEMENTS
        else None
    )

    def values(t: torch.Tensor) -> torch.Tensor:  # flat, float64, at the positions if drawn
        flat = _reshape(_detach(t), (-1,)) if positions is None else _take(_detach(t), positions)
        return _to(flat, _float64)

    target = values(tensor)
    sampled = {id(source): values(source) for source in candidates}
    if count >= COPY_SHARE * size:
        changed = None if mask is None else (mask if positions is None else _take(mask, positions))
        written = target if changed is None else _masked_select(target, changed)
        for source in candidates:
            copied = sampled[id(source)] if changed is None else _masked_select(sampled[id(source)], changed)
            fit = _fits(written, copied)
            if fit is not None:
                return source, not _identity(fit)
    ordered = _sort(target).values
    for source in candidates:
        sorted_source = _sort(sampled[id(source)]).values
        fit = _fits(ordered, sorted_source) or _fits(ordered, _flip(sorted_source, (0,)))
        if fit is not None:
            return source, not _identity(fit)
    return None


def _resolved_then(grid: Any, then: Callable[[], None]) -> Callable[[Any], Any]:
    """The launch's grid, given to Triton as a function that resolves it and then calls
    ``then``: Triton runs a kernel's pre-run hooks and its grid function inside the launch,
    before any program, and what they wrote is not the kernel's."""

    def resolve(meta: Any) -> Any:
        resolved = grid(meta) if callable(grid) else grid
        then()
        return resolved

    return resolve


def _writable(kernel: Any, compiled: Any, args: tuple, kwargs: dict) -> list[torch.Tensor] | None:
    """The tensors a launch's compiled code can write, those behind the parameters its stores
    reach (kernel_stores.py); None when unknown (no compiled code, IR the walk does not
    follow, a parameter not matched to an argument)."""
    try:
        names = written_parameters(compiled.asm["ttir"])
    except (AttributeError, KeyError, TypeError):
        return None
    parameters = list(getattr(kernel, "arg_names", ()))
    given = dict(zip(parameters, args, strict=False))
    given.update((name, value) for name, value in kwargs.items() if name in parameters)
    if names is None or not names <= given.keys():
        return None
    return [
        tensor
        for name in sorted(names)
        for _, tensor in tensors_in(given[name], name)
        if type(tensor) in (torch.Tensor, torch.nn.Parameter)
    ]


def _stands_in(value: Any) -> bool:
    """Whether a kernel argument that is not a plain tensor stands for one: a subclass of
    ``torch.Tensor`` (its operations run its own code), a subclass of Triton's tensor
    descriptor, or any object with a ``data_ptr`` (or a ``__getattr__`` that may make one up),
    which Triton takes for a pointer and whose methods its interpreter calls before and after
    the programs, while no dispatch mode watches (a stand-in once computed the output there).
    Looked up statically: asking would run the candidate's code."""
    if isinstance(value, TensorDescriptor):
        return True
    return any(inspect.getattr_static(value, name, None) is not None for name in ("data_ptr", "__getattr__"))


def replace(tensor: torch.Tensor, generator: torch.Generator) -> None:
    """Overwrites every element of ``tensor`` with another finite value of the same kind
    (module docstring): chunk by chunk in place when it is contiguous, else whole."""
    target = _detach(tensor)
    if bits.is_complex(target):
        target = _view_as_real(target)
    device = bits.device(target)
    sign = -1.0 if float(bits.item(_rand((), generator=generator, device=device))) < 0.5 else 1.0
    move = _Move(target, sign)
    for piece in _chunks(target) if _is_contiguous(target) else [target]:
        move.apply(piece, generator)


class _Move:
    """How a knock-out moves one tensor's values, from the whole tensor (taken chunk by chunk):
    floats all in direction ``sign`` by 0.5 to 1.5 times the root mean square of its finite
    values (at least MIN_SCALE), integers to another value within its range, booleans flip.
    Floats are moved in float32 (float64 in float64): a move of half the RMS or more
    survives rounding to any float dtype."""

    def __init__(self, target: torch.Tensor, sign: float) -> None:
        self.kind = bits.dtype(target)
        self.floating = bits.is_floating_point(target)
        self.scale, self.low, self.span = 0.0, 0, 0
        if self.kind == _bool:
            return
        if self.floating:
            self.work = _float64 if self.kind == _float64 else _float32
            self.scale = sign * max(_rms(target), MIN_SCALE)
            return
        extremes = [(int(bits.item(low)), int(bits.item(high))) for low, high in map(_aminmax, _chunks(target))]
        if extremes:
            self.low = min(low for low, _ in extremes)
            self.span = max(high for _, high in extremes) - self.low + 1

    def apply(self, piece: torch.Tensor, generator: torch.Generator) -> None:
        """Moves the values of ``piece`` (the tensor, or a flat view of part of it) in place."""
        shape, device = bits.shape(piece), bits.device(piece)
        if self.kind == _bool:
            _copy(piece, _logical_not(piece))
        elif self.floating:
            size = _add(_rand(shape, generator=generator, device=device, dtype=self.work), 0.5)
            finite = _nan_to_num(_to(piece, self.work), nan=0.0, posinf=0.0, neginf=0.0)
            _copy(piece, _add(finite, size, alpha=self.scale))
        elif self.span <= 1:
            return  # one value only: nothing else within the range written
        elif self.span > 2**52:  # beyond float64's integers: flip the lowest bit instead
            _copy(piece, _to(_bitwise_xor(_to(piece, _int64), 1), self.kind))
        else:
            step = _randint(1, self.span, shape, generator=generator, device=device, dtype=_int64)
            moved = _add(_remainder(_add(_sub(_to(piece, _int64), self.low), step), self.span), self.low)
            _copy(piece, _to(moved, self.kind))


def _rms(target: torch.Tensor) -> float:
    """The root mean square of a float tensor's finite values (0 when it has none), summed on
    the device chunk by chunk (one wait); the non-finite values, where the sum says there are
    some, are left out in a second pass."""
    device = bits.device(target)
    squares = _zeros((), dtype=_float64, device=device)
    for chunk in _chunks(target):
        norm = _vector_norm(chunk, dtype=_float64)
        squares = _add(squares, _mul(norm, norm))
    total = float(bits.item(squares))
    count = bits.numel(target)
    if not math.isfinite(total):
        squares = _zeros((), dtype=_float64, device=device)
        finite_count = _zeros((), dtype=_int64, device=device)
        for chunk in _chunks(target):
            finite = _nan_to_num(_to(chunk, _float64), nan=0.0, posinf=0.0, neginf=0.0)
            squares = _add(squares, _sum(_mul(finite, finite)))
            finite_count = _add(finite_count, _count(_isfinite(chunk)))
        total, count = float(bits.item(squares)), int(bits.item(finite_count))
    return (total / count) ** 0.5 if count else 0.0


class WorkProbe:
    """Wraps the launch entry points once; does its work only while ``armed``.

    ``recorder`` is the LaunchRecorder (the probe annotates the launches it saw); ``quiet``
    hides the probe's own tensor work from dispatch modes and the profiler; ``capturing``
    says which CUDA graph, if any, the current thread is capturing; ``sync`` waits for all
    the device's work (a kernel may run on another stream).
    """

    def __init__(
        self,
        own_file: str,
        recorder: Any,
        quiet: Callable[[], AbstractContextManager[None]],
        capturing: Callable[[], Any],
        sync: Callable[[], None] = lambda: None,
    ) -> None:
        self.own_file = own_file
        self._recorder = recorder
        self._quiet = quiet
        self._capturing = capturing
        self._sync = sync
        self._lock = threading.RLock()
        self._order: Callable[[str], Replacement | None] | None = None
        self._listener: Listener = _UNHEARD
        self._orders: dict[str, Replacement | None] = {}
        self._generator: dict[torch.device, torch.Generator] = {}
        self.knocked_out = 0  # tensors whose written elements were replaced in this call
        self.launches = 0  # own launches seen in this call (the trace watches it move)
        self.patched: dict[str, Callable[..., Any]] = {}
        self._swapped = False  # the question or the listener was replaced during a call
        self._stand_ins: set[str] = set()  # types of what its kernels were given for tensors since the last call

    def install(self) -> None:
        """Wraps ``JITFunction.run`` (compiled kernels, autotuners, heuristics) and
        ``InterpretedFunction.run`` (the CPU interpreter); call once, before candidate code."""
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        for owner in (JITFunction, InterpretedFunction):
            wrapper = self._wrap(owner.run, interpreted=owner is InterpretedFunction)
            owner.run = wrapper  # type: ignore[method-assign]
            self.patched[f"{owner.__name__}.run"] = wrapper

    def current_patches(self) -> dict[str, Any]:
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        return {"JITFunction.run": JITFunction.run, "InterpretedFunction.run": InterpretedFunction.run}

    @contextmanager
    def armed(self, order: Callable[[str], Replacement | None], listener: Listener) -> Iterator[None]:
        """Watches every own launch inside the block; ``order(kernel)`` is asked once per
        kernel name, after its first launch, whether to knock out what it writes (and with
        what: other ``values`` or ``zeros``);
        ``listener`` hears of every tensor an own launch changed: with how many of its
        elements changed, or, for a copy, with its source."""
        with self._lock:
            self._order, self._listener, self._orders = order, listener, {}
            self.knocked_out = self.launches = 0
        try:
            yield
        finally:
            with self._lock:  # a launch still in progress on another thread finishes first
                self._swapped |= self._order is not order or self._listener is not listener
                self._order, self._listener = None, _UNHEARD

    def take_findings(self) -> list[str]:
        """A finding when the question or the listener the harness armed the probe with was
        replaced during a call since the last one (through the probe's instance attributes)."""
        swapped, self._swapped = self._swapped, False
        stand_ins, self._stand_ins = sorted(self._stand_ins), set()
        findings = []
        if swapped:
            findings.append(
                "the work probe's question or listener was replaced during the call (the judge's instruments edited)"
            )
        if stand_ins:
            findings.append(
                f"its kernels were given objects that stand for tensors ({', '.join(stand_ins)}): a subclass of "
                "torch.Tensor or an object with a data_ptr runs its own code where Triton and the judge read it, "
                "out of the judge's sight: pass plain tensors"
            )
        return findings

    def replayed(self, graph: Any) -> None:
        """A CUDA graph replayed: the listener hears what its capture recorded (captured.py).
        A replay of own launches also writes again whatever a knock-out replaced before it in
        this call (an honest candidate launches once eagerly, then captures and replays), so
        this call's outputs can no longer show whether they need the kernels' results: it
        knocked nothing out."""
        work = getattr(graph, "drkernel_work", None)
        if isinstance(work, CapturedWork) and self._order is not None:
            self._listener.replayed(work)
            if work.launched:
                self.knocked_out = 0

    def _wrap(self, original: Callable[..., Any], interpreted: bool) -> Callable[..., Any]:
        """``original`` watched in checked calls. The interpreter's own tensor work inside a
        launch is hidden from the dispatch modes (the trace); a compiled launch runs no tensor
        work of Triton's, so what PyTorch does inside it is the candidate's (a grid function, a
        Python function called while its kernel compiles) and the trace sees it."""
        probe = self
        hidden = _disable_current_modes if interpreted else nullcontext

        def run(kernel: Any, *args: Any, **kwargs: Any) -> Any:
            if probe._order is None or kwargs.get("warmup"):
                return original(kernel, *args, **kwargs)
            if getattr(getattr(kernel.fn, "__code__", None), "co_filename", None) != probe.own_file:
                return original(kernel, *args, **kwargs)
            return probe._launch(original, hidden, kernel, args, kwargs)

        return run

    def _tensors(self, args: tuple, kwargs: dict) -> list[torch.Tensor]:
        """The plain tensors a launch is given; anything else that stands for a tensor
        (``_stands_in``) is noted as a finding instead."""
        seen: dict[int, torch.Tensor] = {}
        for index, value in enumerate((*args, *kwargs.values())):
            for _, item in arguments_in(value, str(index)):
                if type(item) not in (torch.Tensor, torch.nn.Parameter):
                    if _stands_in(item):
                        self._stand_ins.add(type(item).__name__[:100])
                elif bits.layout(item) == torch.strided:
                    seen.setdefault(id(item), item)
        return list(seen.values())

    def _launch(
        self,
        original: Callable[..., Any],
        hidden: Callable[[], AbstractContextManager[Any]],
        kernel: Any,
        args: tuple,
        kwargs: dict,
    ) -> Any:
        tensors = self._tensors(args, kwargs)
        graph = self._capturing()
        if graph is not None:  # nothing runs while capturing: remember what replays may write
            compiled = original(kernel, *args, **kwargs)
            writes = _writable(kernel, compiled, args, kwargs)
            captured_work(graph).steps.append(CapturedLaunch(tuple(tensors if writes is None else writes)))
            return compiled
        with self._lock:
            before: list[_Argument] = []

            def snapshot() -> None:  # what the arguments hold as the kernel's programs start
                self._listener.used(tensors)  # what pre-run hooks or the grid's code wrote: out of sight
                with self._quiet():
                    self._sync()
                    before[:] = [_Argument(t) for t in tensors]

            if "grid" in kwargs:  # Triton resolves the grid after the pre-run hooks, just before the launch
                kwargs = {**kwargs, "grid": _resolved_then(kwargs["grid"], snapshot)}
            else:
                snapshot()
            position = self._recorder.position()
            with hidden():
                result = original(kernel, *args, **kwargs)
            if tensors and not before:  # the grid was never resolved: nothing was launched
                return result
            name = getattr(kernel.fn, "__name__", "kernel")
            with self._quiet():
                self._sync()
                wrote, changed, copies = self._classify(before)
                before.clear()
            self._recorder.annotate(position, wrote)
            self.launches += 1
            if name not in self._orders and self._order is not None:
                self._orders[name] = self._order(name)
            replacement = self._orders.get(name)
            if changed and replacement is not None:
                with self._quiet():
                    for tensor, _ in changed:
                        if replacement == "values":
                            replace(tensor, self._generator_for(bits.device(tensor)))
                        elif bits.item(_count(tensor)):  # zeros in place of zeros would test nothing
                            _copy(_detach(tensor), _zeros_like(tensor))
                        else:
                            continue
                        self.knocked_out += 1
            # the listener hears of what the call goes on with, replaced or not
            copied = {id(target) for target, _ in copies}
            if copies:
                self._listener.copied(copies)
            if len(copied) < len(changed):
                self._listener.written([(tensor, count) for tensor, count in changed if id(tensor) not in copied])
        return result

    def _classify(
        self, before: list[_Argument]
    ) -> tuple[Wrote, list[tuple[torch.Tensor, int]], list[tuple[torch.Tensor, torch.Tensor]]]:
        """What a launch wrote; the tensors it changed, with how many elements each; and those
        of them that hold a copy of another argument, with that source (module docstring)."""
        changed, masks, unchanged, earlier = [], [], [], []
        for argument in before:
            count, mask = argument.changed()
            if count:
                changed.append((argument.tensor, count))
                masks.append(mask)
                if argument.values_before is not None:  # a source the same launch scribbled on
                    earlier.append((argument.tensor, argument.values_before))
            else:
                unchanged.append(argument.tensor)
        if not changed:
            return "nothing", changed, []
        copies, idle, constant, rescaled = [], 0, 0, 0
        moved, written = 0, 0  # elements copied from elsewhere, elements of data
        lazy: list[tuple[torch.Tensor, torch.Tensor]] | None = None  # sources a move would be no work from
        for (tensor, count), mask in zip(changed, masks, strict=True):
            source = _exact_source(tensor, count, unchanged)
            work = scaled = False
            if source is None:
                generator = self._generator_for(bits.device(tensor))
                found = _rescaled_source(tensor, count, mask, unchanged, generator)
                source, scaled = found if found is not None else (None, False)
                if source is None:  # moving the task's data or the kernels' results is work: not looked for
                    if lazy is None:  # asked once per launch: whether a tensor is the task's data reads it
                        pairs = [*((t, t) for t in _with_whole_storages(unchanged, changed)), *earlier]
                        lazy = [(t, v) for t, v in pairs if not self._listener.worked(t)]
                    others = [(other, values) for other, values in lazy if other is not tensor]
                    made = self._listener.made_in_call
                    source = moved_source(tensor, count, mask, others, generator, COPY_SHARE, made)
                work = source is not None and self._listener.worked(source)
            if source is not None:
                copies.append((tensor, source))
                idle += not work
                rescaled += scaled and not work
                moved += count if not work else 0
            elif _is_constant(tensor, count, mask):
                constant += 1
            else:
                written += count
        if idle + constant < len(changed) and not (idle and written * SCRIBBLE_SHARE < moved):
            return "data", changed, copies
        if idle and rescaled == idle:
            return "rescaled", changed, copies
        return ("copy" if idle else "constant"), changed, copies

    def _generator_for(self, device: torch.device) -> torch.Generator:
        if device not in self._generator:
            generator = torch.Generator(device=device)
            generator.manual_seed(secrets.randbits(63))
            self._generator[device] = generator
        return self._generator[device]
