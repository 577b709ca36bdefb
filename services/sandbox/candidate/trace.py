"""Which tensors PyTorch computed without the candidate's kernels, during a checked call.

A knock-out call shows that the outputs move when the kernels' results move; it cannot show
who did the work. A kernel that adds a buffer to a result PyTorch already computed, copies
that result into the output, or recomputes a row of it, changes the output under knock-out
all the same. This trace, a TorchDispatchMode active during every checked call, keeps apart
what PyTorch computed on its own. A tensor is *derived* when launches of the candidate's own
kernels changed a quarter of it or more (the work probe says so), when an operator that had
a derived input made it, or when one of the candidate's kernels ran inside the operator that
made it; but a result that equals one of its operator's non-derived inputs stays PyTorch's
(the kernels' part was negligible, as when adding zeros). Every other result
is PyTorch's own work, and its values at a fixed set of random positions are remembered as
they were made. When forward returns, a remembered tensor whose values equal an output's at
every position (with a loose tolerance, the output not constant there) is reported; the
judge confirms it against the reference with its own tolerance (judge/work.py), and a
confirmed one means PyTorch computed that output before or without the kernels.

An operator outside ATen (``torch.library.custom_op``, ``triton_op``, ``Library.impl`` with
or without a key set, a C++ registration) is opened: the trace calls its implementation for
the inputs' device directly, below the dispatch mode, with the mode pushed again, so that every
operator its body runs is traced like the forward's own. Where the body is written in Python
the dispatcher holds it out of Python's reach; opening the operator from the dispatcher finds
it however it was registered.

A kernel's write that is only a copy of another argument, rescaled or not (the work probe
says so), is derived only when its source is. The task's data (the forward's inputs, as long
as they hold what the judge gave, and what PyTorch or a kernel merely copied, reshaped or
rescaled from them) is neither the kernels' nor PyTorch's work: copies that PyTorch makes of
it are not remembered, and a kernel's rescaled copy of it counts as work (scaling an input is
the whole of some tasks) but makes nothing that PyTorch computes from it the kernels'. Tensors
born outside PyTorch (``torch.from_numpy``, ``torch.tensor``) are remembered like PyTorch's
results. A remembered result matches an output when their values agree up to a scale and a
shift (a kernel that halves what PyTorch doubled); the values reported are the rescaled ones.

While a CUDA graph is captured nothing runs; its steps are written down (captured.py) and a
replay takes them in order: what the captured launches can write (their compiled code's
stores) is the kernels', and what a captured PyTorch operator computed without them is
PyTorch's, remembered with the values the replay left.

The trace's own tensor work runs through ``quiet``, with tensor functions and methods captured
when this module was imported (a replaced ``torch.Tensor.numel`` changes nothing).
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import FunctionType, ModuleType
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

from services.sandbox.candidate.captured import CapturedLaunch, CapturedOperator, CapturedWork, captured_work
from services.sandbox.candidate.dispatch_mode import PlainDispatchMode
from services.sandbox.shared import tensor_bits as bits
from services.sandbox.shared.tensor_bits import Snapshot
from services.sandbox.wire.judge_candidate import PyTorchMatch

_TensorBase = torch._C.TensorBase
_take = torch.take
_randint = torch.randint
_to = _TensorBase.to
_detach = _TensorBase.detach
_abs = torch.abs
_all = torch.all
_eq = torch.eq
_le = torch.le
_add = torch.add
_sub = torch.sub
_mul = torch.mul
_sum = torch.sum
_mean = torch.mean
_sqrt = torch.sqrt
_amin = torch.amin
_amax = torch.amax
_isfinite = torch.isfinite
_float64 = torch.float64
_dispatch_keys = torch._C._dispatch_keys
_has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
_has_computed_kernel = torch._C._dispatch_has_computed_kernel_for_dispatch_key
_device_key = torch._C._dispatch_key_for_device
_BACKEND_SELECT = torch._C.DispatchKeySet(torch._C.DispatchKey.BackendSelect)
_redispatch = torch._ops.OpOverload.redispatch
_OpOverload = torch._ops.OpOverload
_operator_name = torch._ops.OpOverload.name
# The keys an operator's implementations sit under once the dispatch mode has seen it
_BELOW_MODE = torch._C._dispatch_keyset_full_after(torch._C.DispatchKey.Python)
_BUILT_IN = ("aten", "prims")  # namespaces whose operators are PyTorch's own

SAMPLE_POSITIONS = 1024
MIN_ELEMENTS = 16  # smaller outputs coincide too easily
# PyTorch results remembered per call and element count, a uniform sample of those made (a
# forward that first made 1,100 small results had the first 1,024 fill a budget for all sizes,
# and the one that equalled the output went unremembered)
MAX_SAMPLED = 1024
MAX_MATCHES_PER_OUTPUT = 4
# Data made out of sight counts as work done there from this many bytes in a call on (the
# storages behind what forward used, in any dtype): a forward may build a small table or a
# few indices from Python lists (torch.tensor), which the dispatcher shows as it shows NumPy's.
OUTSIDE_BYTES = 1024
# How far the tensors a candidate holds from before a call are looked for (held_tensors)
HELD_DEPTH = 6
HELD_OBJECTS = 20_000
DERIVED_SHARE = 4  # a storage is the kernels' once they changed 1/DERIVED_SHARE of it
NEGLIGIBLE = 1e-3  # a result this close to a PyTorch input owes nothing to the kernels' results
# ... nor one this close in norm (relative L2, the judge's float32 bound): a few elements
# changed by more, the rest not at all, is a change the judge would not see in an output.
NEGLIGIBLE_L2 = 1.5e-3
# The candidate-side filter; the judge's tolerance decides.
LOOSE_TOLERANCE = 0.05
# An output matches a remembered result up to a scale and a shift when the least-squares fit
# leaves less than this share of the output's spread (its norm about its mean) unexplained,
# and only from this size on: on a few positions a piecewise-linear output (ReLU, a clamp)
# can lie on one of its pieces.
AFFINE_RESIDUAL = 0.01
AFFINE_MIN_ELEMENTS = 256
# Operators that only move or convert their input's values: a copy of the task's data made
# with them is still the task's data.
MOVES = frozenset(
    {
        "aten::clone",
        "aten::_to_copy",
        "aten::copy_",
        "aten::contiguous",
        "aten::_unsafe_view",
        "aten::view",
        "aten::reshape",
        "aten::expand",
        "aten::permute",
        "aten::transpose",
        "aten::t",
        "aten::squeeze",
        "aten::unsqueeze",
        "aten::flatten",
        "aten::alias",
        "aten::detach",
        "aten::slice",
        "aten::select",
        "aten::as_strided",
    }
)
# Operators through which a tensor enters from outside PyTorch (NumPy, Python values).
BORN = frozenset({"aten::lift_fresh", "aten::lift_fresh_copy"})


@dataclass(frozen=True)
class _Sample:
    operator: str
    key: tuple[int, torch.device]
    values: torch.Tensor
    profiled: bool  # a PyTorch operator made it (the profile counts it)


def _storage(tensor: torch.Tensor) -> int | None:
    held = bits.storage(tensor)
    return held[0] if held is not None else None


def _storage_elements(tensor: torch.Tensor) -> tuple[int, int] | None:
    """Where the tensor's storage starts and how many of its elements the storage holds."""
    held = bits.storage(tensor)
    return (held[0], max(1, held[1] // max(1, bits.element_size(tensor)))) if held is not None else None


_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def _subclasses(leaves: list[Any]) -> list[type]:
    """The tensor subclasses among ``leaves`` that dispatch operators themselves (a kernel
    launched inside such a subclass's dispatch must not make PyTorch's operator look like the
    kernels' work)."""
    found: list[type] = []
    for leaf in leaves:
        kind = type(leaf)
        if isinstance(leaf, torch.Tensor) and kind not in _PLAIN_TENSORS and kind not in found:
            found.append(kind)
    return found


def _true(tensor: torch.Tensor) -> bool:
    return bool(bits.item(tensor))


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    for leaf in tree_leaves(value):
        if type(leaf) in _PLAIN_TENSORS:
            yield leaf


class PyTorchTrace(PlainDispatchMode):
    """The dispatch mode; ``begin()`` starts a call, ``matches()`` ends it."""

    def __init__(
        self,
        own_launches: Callable[[], int],
        quiet: Callable[[], AbstractContextManager[None]],
        capturing: Callable[[], Any],
        unwatched: Callable[[], bool] = lambda: False,
    ) -> None:
        super().__init__()
        self._own_launches = own_launches
        self._unwatched = unwatched
        self._quiet = quiet
        self._capturing = capturing
        self._derived: set[int] = set()
        self._written: dict[int, list[int]] = {}  # storage -> [elements written, elements]
        self._made: set[int] = set()  # storages of every operator's results
        self._samples: dict[tuple[int, torch.device], list[_Sample]] = {}  # by (elements, device)
        self._made_count: dict[tuple[int, torch.device], int] = {}  # results offered, by the same key
        self._choice = random.Random(secrets.randbits(64))
        self._positions: dict[tuple[int, torch.device], torch.Tensor] = {}
        self._generator: dict[torch.device, torch.Generator] = {}
        self._plain: dict[int, tuple[torch.Tensor, Snapshot]] = {}  # storage -> the task's data there
        self._foreign: set[int] = set()  # storages of this call's tensors that nothing the trace saw made
        self._kept: set[int] = set()  # storages the forward found when it began (weights, tables)
        # storages of data this call used that was made or written out of sight: their bytes,
        # and how the first of them was used
        self._outside: dict[int, int] = {}
        self._outside_first = ""
        # storage -> (tensor, positions, values there) as the trace last saw them written
        self._contents: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def begin(self, inputs: Iterable[tuple[torch.Tensor, Snapshot]] = (), kept: Iterable[torch.Tensor] = ()) -> None:
        """Starts a call whose forward inputs are ``inputs``, each with a snapshot of what the
        judge gave (it stays the task's data only while it holds that); ``kept`` are the
        tensors the candidate holds from before the call (its weights, buffers and tables),
        whose values are noted now."""
        self._derived, self._written, self._made, self._samples, self._positions = set(), {}, set(), {}, {}
        self._made_count = {}
        self._plain, self._foreign, self._contents, self._kept, self._outside = {}, set(), {}, set(), {}
        self._outside_first = ""
        for tensor, snapshot in inputs:
            pointer = _storage(tensor)
            if pointer is not None:
                self._plain[pointer] = (tensor, snapshot)
                self._refresh(tensor)
        for tensor in kept:
            pointer = _storage(tensor)
            if pointer is not None and pointer not in self._plain and pointer not in self._kept:
                self._kept.add(pointer)
                self._refresh(tensor)

    def written(self, writes: Iterable[tuple[torch.Tensor, int]]) -> None:
        """Hears that the candidate's kernels changed ``count`` elements of each tensor: its
        storage is derived once they changed a quarter of it (a kernel that touches a sliver
        of a tensor PyTorch computed does not make what PyTorch computes from it its own)."""
        for tensor, count in writes:
            held = _storage_elements(tensor)
            if held is None:
                continue
            pointer, total = held
            seen = self._written.setdefault(pointer, [0, total])
            seen[0] += count
            if seen[0] * DERIVED_SHARE >= seen[1]:
                self._derived.add(pointer)
            self._refresh(tensor)

    def copied(self, copies: Iterable[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Hears that the candidate's kernels filled each target with a copy of its source,
        rescaled or not: the target is the kernels' result only when the source is, and the
        task's data when the source is."""
        for target, source in copies:
            held = _storage_elements(target)
            if held is None:
                continue
            pointer, total = held
            self._written.setdefault(pointer, [0, total])  # something of the call wrote it
            if _storage(source) in self._derived:
                self._derived.add(pointer)
            else:
                self._derived.discard(pointer)
                self._written[pointer][0] = 0
                if self.plain(source):
                    self._keep_plain(target)
            self._refresh(target)  # what it holds now, the trace saw written

    def used(self, tensors: list[torch.Tensor]) -> None:
        """Hears of the tensor arguments of a launch of the candidate's kernels, before it
        runs: one made out of the trace's sight is remembered (a kernel that copies it into
        the output, whole or in part, moves work done elsewhere)."""
        self._check_inputs("a launch of its kernels", tensors)

    def made_in_call(self, tensor: torch.Tensor) -> bool:
        """Whether an operator of this call made ``tensor`` or it entered the call unseen."""
        pointer = _storage(tensor)
        return pointer in self._made or pointer in self._foreign

    def worked(self, tensor: torch.Tensor) -> bool:
        """Whether ``tensor`` holds the task's data or what the kernels computed."""
        return _storage(tensor) in self._derived or self.plain(tensor)

    def plain(self, tensor: torch.Tensor) -> bool:
        """Whether ``tensor`` lives where the task's data is and that memory still holds it."""
        entry = self._plain.get(_storage(tensor))  # type: ignore[arg-type]
        if entry is None:
            return False
        with self._quiet():
            return entry[1].unchanged(entry[0])

    def _keep_plain(self, tensor: torch.Tensor) -> None:
        pointer = _storage(tensor)
        if pointer is not None:
            with self._quiet():
                self._plain[pointer] = (tensor, Snapshot(tensor))
            self._refresh(tensor)

    def derive(self, tensors: Iterable[torch.Tensor]) -> None:
        """Marks tensors as made from the candidate's kernels' results."""
        for tensor in tensors:
            pointer = _storage(tensor)
            if pointer is not None:
                self._derived.add(pointer)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        leaves = tree_leaves((args, kwargs))
        subclasses = _subclasses(leaves)
        if subclasses:  # a tensor subclass's own dispatch: trace what it runs, operator by operator
            with self:
                return subclasses[0].__torch_dispatch__(func, tuple(subclasses), args, kwargs)
        inputs = [leaf for leaf in leaves if type(leaf) in _PLAIN_TENSORS]
        keys = _implementation_keys(func, inputs)
        if keys is not None:  # an operator outside ATen: trace what its body runs, operator by operator
            with self:
                return _redispatch(func, keys, *args, **kwargs)
        input_storages = {pointer for pointer in map(_storage, inputs) if pointer is not None}
        schema = getattr(func, "_schema", None)
        mutable = schema is None or schema.is_mutable  # an operator without a schema may write anything
        graph = self._capturing()
        if graph is None:
            self._check_inputs(str(func), inputs)
        launches = self._own_launches()
        # an out= tensor over its whole storage that no other argument reads is only written:
        # what a kernel left there is gone
        outs = _out_arguments(schema, kwargs)
        read = {_storage(t) for t in _tensors((args, {k: v for k, v in kwargs.items() if k not in outs}))}
        replaced = {_storage(t) for t in outs.values() if _whole(t)} - read
        from_kernels = any(pointer in self._derived for pointer in input_storages - replaced)
        plain = self._plain_inputs(inputs) if from_kernels and graph is None else []
        result = func(*args, **kwargs)
        made = list(_tensors(result))
        written = [*made, *(inputs if mutable else [])]  # in place too
        self._made.update(pointer for pointer in map(_storage, made) if pointer is not None)
        if any(_storage(t) in self._derived - replaced for t in made):  # it lives in the kernels' memory
            from_kernels = True
        name = schema.name if schema is not None else ""
        kernels_inside = self._own_launches() != launches
        if graph is not None:  # nothing ran: replays take this step (replayed)
            step = CapturedOperator(str(func), name, tuple(inputs), tuple(written), kernels_inside)
            captured_work(graph).steps.append(step)
            return result
        if kernels_inside:
            self.derive(written)
            self._refresh_all(written)
            return result
        if from_kernels:
            kept = self._unchanged(made, plain)
            kept_storages = {_storage(t) for t in kept}
            self.derive(t for t in written if _storage(t) not in kept_storages)
            self._refresh_all(written)
            if kept:
                with self._quiet():
                    for tensor in kept:
                        self._remember(str(func), tensor, True)
            return result
        self._derived -= replaced
        if name in MOVES:
            sources = [args[1]] if name == "aten::copy_" and len(args) > 1 else inputs
            if sources and all(isinstance(t, torch.Tensor) and self.plain(t) for t in sources):
                for tensor in [*made, *(args[:1] if name == "aten::copy_" else [])]:
                    if _storage(tensor) not in self._plain:
                        self._keep_plain(tensor)
                self._refresh_all(written)
                return result  # the task's data, moved: nobody's work
        self._refresh_all(written)
        born = name in BORN
        fresh = [t for t in made if mutable or born or _storage(t) not in input_storages]  # not a view of an input
        if fresh:
            with self._quiet():
                for tensor in fresh:
                    if bits.numel(tensor) >= MIN_ELEMENTS and not bits.is_complex(tensor):
                        operator = f"{func} (from outside PyTorch)" if born else str(func)
                        self._remember(operator, tensor, not born)
        return result

    def replayed(self, work: CapturedWork) -> None:
        """Hears that a CUDA graph captured in a checked call ran again: its steps are taken
        in order as they would have been seen eagerly. A launch's writes are the kernels'
        results; an operator with a derived input, or with a kernel inside, makes more of them;
        a move of the task's data keeps it the task's (a copy over a whole tensor is judged by
        its source alone: a knock-out cannot reach into a replay to show that the kernel's
        result it overwrote was lost); what any other operator wrote last is
        PyTorch's own work and is remembered with the values the replay left there. (Whether
        a result merely equals a plain input, as after adding zeros, is not asked: an in-place
        operator's input already holds its result after the replay.)"""
        pytorch: dict[int | None, tuple[str, torch.Tensor]] = {}  # storage -> what PyTorch wrote there last

        def not_pytorchs(tensors: Iterable[torch.Tensor]) -> None:
            for tensor in tensors:
                pytorch.pop(_storage(tensor), None)

        for step in work.steps:
            if isinstance(step, CapturedLaunch):
                self.written((tensor, bits.numel(tensor)) for tensor in step.written)
                not_pytorchs(step.written)
                continue
            written = list(step.written)
            self._made.update(pointer for pointer in map(_storage, written) if pointer is not None)
            inputs = step.inputs
            if step.name == "aten::copy_" and len(inputs) > 1 and _whole(inputs[0]):
                inputs = inputs[1:]  # overwritten whole: what it held before is gone
            if step.kernels_inside or any(_storage(t) in self._derived for t in inputs):
                self.derive(written)
                not_pytorchs(written)
                continue
            sources = step.inputs[1:2] if step.name == "aten::copy_" else step.inputs
            if step.name in MOVES and sources and all(self.plain(t) for t in sources):
                not_pytorchs(written)
                for tensor in written:
                    self._keep_plain(tensor)
                continue
            for tensor in written:
                pointer = _storage(tensor)
                if pointer is not None:
                    self._derived.discard(pointer)
                    pytorch[pointer] = (f"{step.operator} (replayed from a CUDA graph)", tensor)
        self._refresh_all([tensor for step in work.steps for tensor in step.written])
        with self._quiet():
            for operator, tensor in pytorch.values():
                if bits.numel(tensor) >= MIN_ELEMENTS and not bits.is_complex(tensor):
                    self._remember(operator, tensor, True)

    def _check_inputs(self, operator: str, inputs: list[torch.Tensor]) -> None:
        """Remembers each input that holds what nothing the trace saw wrote: a tensor no
        operator of this call made and no kernel wrote, seen for the first time (made where
        the trace cannot see, NumPy through ``torch.frombuffer`` or another thread, or kept
        from before, a weight or a table), or one whose values changed since the trace last
        saw it written (NumPy or ctypes writing into memory PyTorch allocated, the task's data
        included: an input or a copy of it, which then is the task's data no more). One that
        equals an output means the output was computed out of sight. Each but a kept one
        unchanged since the call began is also work done out of sight (``outside``)."""
        for tensor in inputs:
            pointer = _storage(tensor)
            if pointer is None:
                continue
            if pointer in self._plain:
                if not self._changed(pointer):
                    continue
                del self._plain[pointer]  # written out of sight: no longer the task's data
            if pointer in self._outside:  # a view of more of it than seen before counts in full
                self._note_outside(pointer, tensor, operator, "")
            known = pointer in self._made or pointer in self._written or pointer in self._foreign
            kept = pointer in self._kept and not known
            changed = self._changed(pointer)
            if known and not changed:
                continue
            if (changed and not self._one_value(pointer)) or not (changed or kept):  # a fill is no work
                self._note_outside(pointer, tensor, operator, "written" if changed else "made")
            self._derived.discard(pointer)  # what the kernels wrote there is gone
            self._foreign.add(pointer)
            self._refresh(tensor)
            if bits.numel(tensor) >= MIN_ELEMENTS and not bits.is_complex(tensor):
                with self._quiet():
                    self._remember(
                        f"code out of the trace's sight (a tensor written unseen, used by {operator})",
                        tensor,
                        False,  # not profiled
                    )

    def _note_outside(self, pointer: int, tensor: torch.Tensor, operator: str, how: str) -> None:
        """Counts the bytes of a storage whose data was made or written out of sight."""
        held = bits.storage(tensor)
        self._outside[pointer] = max(self._outside.get(pointer, 0), held[1] if held is not None else 0)
        if how and not self._outside_first:
            dtype = str(bits.dtype(tensor)).removeprefix("torch.")
            self._outside_first = f"{operator} used {dtype} data {how} out of its sight"

    def _refresh_all(self, tensors: list[torch.Tensor]) -> None:
        for tensor in tensors:
            self._refresh(tensor)

    def _refresh(self, tensor: torch.Tensor) -> None:
        """Notes what a tensor's storage holds now, as something the trace saw write it: the
        values of the whole storage at sampled positions, whatever part of it this tensor
        views (a candidate that holds eight elements of a large storage must not have the
        rest filled unseen)."""
        pointer = _storage(tensor)
        if pointer is None:
            return
        noted = self._contents.get(pointer)
        if noted is not None:
            tensor, positions, _ = noted
        else:
            with self._quiet():
                whole = bits.whole_storage(tensor)
                if bits.numel(whole) < MIN_ELEMENTS or bits.is_complex(whole):
                    return
                integers = bits.as_integers(whole)  # compared bit for bit: NaN payloads, signed zeros
                if integers is None:
                    return
                tensor = integers
                _, positions = self._key_positions(tensor)
        with self._quiet():
            self._contents[pointer] = (tensor, positions, _take(tensor, positions))

    def _changed(self, pointer: int) -> bool:
        """Whether the storage noted for ``pointer`` holds other bits than when noted."""
        noted = self._contents.get(pointer)
        if noted is None or self._unwatched():  # a launch the probe did not watch may have written it
            return False
        tensor, positions, values = noted
        with self._quiet():
            return not _true(_all(_eq(_take(tensor, positions), values)))

    def _one_value(self, pointer: int) -> bool:
        """Whether the storage noted for ``pointer`` now holds one value at its noted positions
        (a pre-run hook zeroing an accumulator, say)."""
        tensor, positions, _ = self._contents[pointer]
        with self._quiet():
            now = _take(tensor, positions)
            return bool(bits.item(_amin(now)) == bits.item(_amax(now)))

    def _plain_inputs(self, inputs: list[torch.Tensor]) -> list[tuple[torch.Tensor, tuple[int, torch.device], Any]]:
        """The inputs not derived from the kernels, sampled as they are before the operator."""
        plain = []
        with self._quiet():
            for tensor in inputs:
                if _storage(tensor) in self._derived or bits.numel(tensor) < MIN_ELEMENTS or bits.is_complex(tensor):
                    continue
                key, positions = self._key_positions(tensor)
                plain.append((tensor, key, _to(_take(_detach(tensor), positions), _float64)))
        return plain

    def _unchanged(self, made: list[torch.Tensor], plain: list[Any]) -> list[torch.Tensor]:
        """The results that equal an input not derived from the kernels (as it was before the
        operator): what the kernels' results added was negligible, so they stay PyTorch's."""
        if not plain:
            return []
        kept = []
        with self._quiet():
            for tensor in made:
                if bits.numel(tensor) < MIN_ELEMENTS or bits.is_complex(tensor):
                    continue
                key, positions = self._key_positions(tensor)
                now = _to(_take(_detach(tensor), positions), _float64)
                for _, plain_key, before in plain:
                    if plain_key != key or _true(_eq(_amin(before), _amax(before))):
                        continue
                    if _close(now, before, NEGLIGIBLE) or _near(now, before, NEGLIGIBLE_L2):
                        kept.append(tensor)
                        break
        return kept

    def _key_positions(self, tensor: torch.Tensor) -> tuple[tuple[int, torch.device], torch.Tensor]:
        size, device = bits.numel(tensor), bits.device(tensor)
        key = (size, device)
        if key not in self._positions:
            if device not in self._generator:
                generator = torch.Generator(device=device)
                generator.manual_seed(secrets.randbits(63))
                self._generator[device] = generator
            count = min(SAMPLE_POSITIONS, size)
            self._positions[key] = _randint(0, size, (count,), generator=self._generator[device], device=device)
        return key, self._positions[key]

    def _remember(self, operator: str, tensor: torch.Tensor, profiled: bool) -> None:
        """Keeps the result's values at the sampled positions, or not: of the results of one
        element count, MAX_SAMPLED drawn uniformly (reservoir sampling), so that making many
        results first pushes none out for certain."""
        key, positions = self._key_positions(tensor)
        offered = self._made_count[key] = self._made_count.get(key, 0) + 1
        kept = self._samples.setdefault(key, [])
        slot = len(kept) if len(kept) < MAX_SAMPLED else self._choice.randrange(offered)
        if slot >= MAX_SAMPLED:
            return
        sample = _Sample(operator, key, _to(_take(_detach(tensor), positions), _float64), profiled)
        if slot == len(kept):
            kept.append(sample)
        else:
            kept[slot] = sample

    def outside(self) -> list[str]:
        """What this call used that was made or written out of the trace's sight: not by
        PyTorch's operators or the candidate's kernels (NumPy, another process or thread),
        and not held from before the call unchanged. The work that made it is neither traced
        nor profiled. Empty below OUTSIDE_BYTES in all."""
        total = sum(self._outside.values())
        if total < OUTSIDE_BYTES:
            return []
        return [f"{self._outside_first} ({len(self._outside)} storage(s), {total} bytes in all)"]

    def unseen(self, outputs: list[Any]) -> list[int]:
        """The outputs that neither the candidate's kernels nor any operator of this call
        wrote, or that changed since they last did: computed where the trace cannot see
        (another thread, NumPy writing into PyTorch's memory) or not at all."""
        return [
            index
            for index, output in enumerate(outputs)
            if type(output) is torch.Tensor
            and bits.numel(output) > 0
            and (pointer := _storage(output)) is not None
            and (
                (pointer not in self._made and pointer not in self._written and pointer not in self._derived)
                or self._changed(pointer)  # written since, by neither
            )
        ]

    def matches(self, outputs: list[Any]) -> list[PyTorchMatch]:
        """The remembered PyTorch results that equal an output at every sampled position."""
        found: list[PyTorchMatch] = []
        with self._quiet():
            for index, output in enumerate(outputs):
                if type(output) is not torch.Tensor or bits.numel(output) < MIN_ELEMENTS or bits.is_complex(output):
                    continue
                key = (bits.numel(output), bits.device(output))
                positions = self._positions.get(key)
                if positions is None:
                    continue
                final = _to(_take(_detach(output), positions), _float64)
                if not _true(_all(_isfinite(final))) or _true(_eq(_amin(final), _amax(final))):
                    continue
                for sample in self._samples.get(key, []):
                    if not _true(_all(_isfinite(sample.values))):
                        continue
                    values: torch.Tensor | None = sample.values
                    exact = _close(sample.values, final, LOOSE_TOLERANCE)
                    if not exact:
                        values = _rescaled(sample.values, final) if key[0] >= AFFINE_MIN_ELEMENTS else None
                    if values is None:
                        continue
                    found.append(
                        PyTorchMatch(
                            operator=sample.operator[:256],
                            output=index,
                            positions=[int(p) for p in bits.values(positions)],
                            values=[float(v) for v in bits.values(values)],
                            rescaled=not exact,
                            profiled=sample.profiled,
                        )
                    )
                    if sum(1 for m in found if m.output == index) >= MAX_MATCHES_PER_OUTPUT:
                        break
        self._samples, self._made_count = {}, {}
        return found


def _out_arguments(schema: Any, kwargs: dict) -> dict[str, torch.Tensor]:
    """The tensors an operator was given to write its result into (``out=``), by name."""
    if schema is None:
        return {}
    return {
        argument.name: kwargs[argument.name]
        for argument in schema.arguments
        if getattr(argument, "is_out", False) and isinstance(kwargs.get(argument.name), torch.Tensor)
    }


def _whole(tensor: torch.Tensor) -> bool:
    """Whether the tensor covers every byte of its storage."""
    held = bits.storage(tensor)
    return held is not None and bits.numel(tensor) * bits.element_size(tensor) >= held[1]


def held_tensors(roots: Iterable[Any]) -> list[torch.Tensor]:
    """The tensors reachable from ``roots`` (the model, the candidate's module) through
    objects' attributes, containers, classes defined with them and functions' defaults and
    closures, at most HELD_DEPTH steps and HELD_OBJECTS objects away, other modules and the
    module's ``__builtins__`` left out: what a forward may use that it did not make. Reads no attribute through the
    candidate's own code (no properties, no ``__getattribute__``)."""
    found: list[torch.Tensor] = []
    seen: set[int] = set()
    pending = [(root, 0) for root in roots]
    while pending and len(seen) < HELD_OBJECTS:
        value, depth = pending.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        kind = type(value)
        if issubclass(kind, _TensorBase):
            found.append(value)
            continue
        if depth >= HELD_DEPTH:
            continue
        if issubclass(kind, dict):  # the base class's methods: no code of the candidate's runs
            children = list(dict.values(value))
        elif issubclass(kind, list):
            children = list(list.__iter__(value))
        elif issubclass(kind, tuple):
            children = list(tuple.__iter__(value))
        elif kind in (set, frozenset):
            children = list(value)
        elif kind is FunctionType:
            cells = value.__closure__ or ()
            children = [*(value.__defaults__ or ()), *(_cell_contents(cell) for cell in cells)]
        elif kind is ModuleType:  # the candidate's own globals, not __builtins__ or another module
            if depth > 0:
                continue
            children = [child for name, child in vars(value).items() if not name.startswith("__")]
        elif issubclass(kind, type):  # a class's attributes, read from its own namespace
            children = list(_class_namespace(value).values())
        else:
            try:
                children = list(dict.values(object.__getattribute__(value, "__dict__")))
            except (AttributeError, TypeError):
                continue
        pending.extend((child, depth + 1) for child in children)
    return found


_class_namespace = type.__dict__["__dict__"].__get__


def _cell_contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def _implementation_keys(func: Any, inputs: list[torch.Tensor]) -> Any:
    """The dispatch keys under which an operator outside ATen has its implementation for these
    inputs (to call it below the dispatch mode), or None for PyTorch's own operators, operators
    without tensor inputs or without an implementation there (they run as called), and anything
    that is not an operator overload."""
    if not isinstance(func, _OpOverload) or func.namespace in _BUILT_IN or not inputs:
        return None
    keys = _dispatch_keys(inputs[0])
    for tensor in inputs[1:]:
        keys = keys | _dispatch_keys(tensor)
    name = _operator_name(func)
    if _has_kernel(name, torch._C.DispatchKey.BackendSelect):  # a key no tensor carries
        return (keys | _BACKEND_SELECT) & _BELOW_MODE
    if not _has_computed_kernel(name, _device_key(bits.device(inputs[0]).type)):
        return None
    return keys & _BELOW_MODE


def _close(values: torch.Tensor, wanted: torch.Tensor, tolerance: float) -> bool:
    """Every value within ``tolerance * (1 + |wanted|)`` of the one wanted."""
    return _true(_all(_le(_abs(_sub(values, wanted)), _mul(_add(_abs(wanted), 1.0), tolerance))))


def _near(values: torch.Tensor, wanted: torch.Tensor, share: float) -> bool:
    """``||values - wanted|| <= share * ||wanted||``."""
    difference = _sub(values, wanted)
    return bool(bits.item(_sum(_mul(difference, difference))) <= share**2 * bits.item(_sum(_mul(wanted, wanted))))


def _rescaled(values: torch.Tensor, wanted: torch.Tensor) -> torch.Tensor | None:
    """``a * values + b`` (least squares, ``a`` not 0) when it leaves less than AFFINE_RESIDUAL
    of ``wanted``'s spread unexplained, else None."""
    centred, target = _sub(values, _mean(values)), _sub(wanted, _mean(wanted))
    scale, spread = bits.item(_sum(_mul(centred, centred))), bits.item(_sum(_mul(target, target)))
    if scale == 0 or spread == 0:
        return None
    slope = bits.item(_sum(_mul(centred, target))) / scale
    fitted = _add(_mul(centred, slope), _mean(wanted))
    residual = bits.item(_sum(_mul(_sub(wanted, fitted), _sub(wanted, fitted))))
    return fitted if slope != 0 and residual <= AFFINE_RESIDUAL**2 * spread else None
