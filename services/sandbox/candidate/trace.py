"""Which tensors PyTorch computed without the candidate's kernels, during a checked call.

A knock-out call shows that the outputs move when the kernels' results move; it cannot show
who did the work. A kernel that adds a buffer to a result PyTorch already computed, copies
that result into the output, or recomputes a row of it, changes the output under knock-out
all the same. This trace, a TorchDispatchMode active during every checked call, keeps apart
what PyTorch computed on its own. A tensor is *derived* when launches of the candidate's own
kernels changed a quarter of it or more (the work probe says so), when an operator that had
a derived input made it, or when one of the candidate's kernels ran inside the operator that
made it (a custom op); but a result that equals one of its operator's non-derived inputs
stays PyTorch's (the kernels' part was negligible, as when adding zeros). Every other result
is PyTorch's own work, and its values at a fixed set of random positions are remembered as
they were made. When forward returns, a remembered tensor whose values equal an output's at
every position (with a loose tolerance, the output not constant there) is reported; the
judge confirms it against the reference with its own tolerance (judge/work.py), and a
confirmed one means PyTorch computed that output before or without the kernels.

Results made while a CUDA graph is captured are derived (their values come from replays,
which the probe cannot watch), as is everything the candidate's captured launches were
given. The trace's own tensor work runs through ``quiet``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from services.sandbox.wire.judge_candidate import PyTorchMatch

_TensorBase = torch._C.TensorBase
_take = torch.take
_randint = torch.randint
_to = _TensorBase.to
_abs = torch.abs
_all = torch.all
_eq = torch.eq
_isfinite = torch.isfinite
_float64 = torch.float64

SAMPLE_POSITIONS = 1024
MIN_ELEMENTS = 16  # smaller outputs coincide too easily
MAX_SAMPLED = 1024  # PyTorch results remembered per call
MAX_MATCHES_PER_OUTPUT = 4
DERIVED_SHARE = 4  # a storage is the kernels' once they changed 1/DERIVED_SHARE of it
NEGLIGIBLE = 1e-3  # a result this close to a PyTorch input owes nothing to the kernels' results
# The candidate-side filter; the judge's tolerance decides.
LOOSE_TOLERANCE = 0.05


@dataclass(frozen=True)
class _Sample:
    operator: str
    key: tuple[int, torch.device]
    values: torch.Tensor


def _storage(tensor: torch.Tensor) -> int | None:
    try:
        pointer = tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None
    return pointer or None


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    for leaf in tree_leaves(value):
        if type(leaf) in (torch.Tensor, torch.nn.Parameter):
            yield leaf


class PyTorchTrace(TorchDispatchMode):
    """The dispatch mode; ``begin()`` starts a call, ``matches()`` ends it."""

    def __init__(
        self,
        own_launches: Callable[[], int],
        quiet: Callable[[], AbstractContextManager[None]],
        capturing: Callable[[], Any],
    ) -> None:
        super().__init__()
        self._own_launches = own_launches
        self._quiet = quiet
        self._capturing = capturing
        self._derived: set[int] = set()
        self._written: dict[int, list[int]] = {}  # storage -> [elements written, elements]
        self._made: set[int] = set()  # storages of every operator's results
        self._samples: list[_Sample] = []
        self._positions: dict[tuple[int, torch.device], torch.Tensor] = {}
        self._generator: dict[torch.device, torch.Generator] = {}

    def begin(self) -> None:
        self._derived, self._written, self._made, self._samples, self._positions = set(), {}, set(), [], {}

    def written(self, writes: Iterable[tuple[torch.Tensor, int]]) -> None:
        """Hears that the candidate's kernels changed ``count`` elements of each tensor: its
        storage is derived once they changed a quarter of it (a kernel that touches a sliver
        of a tensor PyTorch computed does not make what PyTorch computes from it its own)."""
        for tensor, count in writes:
            pointer = _storage(tensor)
            if pointer is None:
                continue
            total = max(1, tensor.untyped_storage().nbytes() // max(1, tensor.element_size()))
            seen = self._written.setdefault(pointer, [0, total])
            seen[0] += count
            if seen[0] * DERIVED_SHARE >= seen[1]:
                self._derived.add(pointer)

    def derive(self, tensors: Iterable[torch.Tensor]) -> None:
        """Marks tensors as made from the candidate's kernels' results."""
        for tensor in tensors:
            pointer = _storage(tensor)
            if pointer is not None:
                self._derived.add(pointer)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        inputs = list(_tensors((args, kwargs)))
        input_storages = {pointer for pointer in map(_storage, inputs) if pointer is not None}
        schema = getattr(func, "_schema", None)
        mutable = schema is None or schema.is_mutable  # an operator without a schema may write anything
        graph = self._capturing()
        launches = self._own_launches()
        from_kernels = any(pointer in self._derived for pointer in input_storages)
        plain = self._plain_inputs(inputs) if from_kernels and graph is None else []
        result = func(*args, **kwargs)
        made = list(_tensors(result))
        self._made.update(pointer for pointer in map(_storage, made) if pointer is not None)
        if any(_storage(t) in self._derived for t in made):  # it lives in the kernels' memory
            from_kernels = True
        if graph is not None or self._own_launches() != launches:
            self.derive(made)
            if mutable:
                self.derive(inputs)  # what it wrote in place
            if graph is not None:
                if not hasattr(graph, "drkernel_written"):
                    graph.drkernel_written = []
                graph.drkernel_written.extend(made)
            return result
        if from_kernels:
            kept = self._unchanged(made, plain)
            kept_storages = {_storage(t) for t in kept}
            self.derive(t for t in [*made, *(inputs if mutable else [])] if _storage(t) not in kept_storages)
            if kept and len(self._samples) < MAX_SAMPLED:
                with self._quiet():
                    for tensor in kept:
                        self._remember(str(func), tensor)
            return result
        fresh = [t for t in made if mutable or _storage(t) not in input_storages]  # not a view of an input
        if fresh and len(self._samples) < MAX_SAMPLED:
            with self._quiet():
                for tensor in fresh:
                    if tensor.numel() >= MIN_ELEMENTS and not tensor.is_complex():
                        self._remember(str(func), tensor)
        return result

    def _plain_inputs(self, inputs: list[torch.Tensor]) -> list[tuple[torch.Tensor, tuple[int, torch.device], Any]]:
        """The inputs not derived from the kernels, sampled as they are before the operator."""
        plain = []
        with self._quiet():
            for tensor in inputs:
                if _storage(tensor) in self._derived or tensor.numel() < MIN_ELEMENTS or tensor.is_complex():
                    continue
                key, positions = self._key_positions(tensor)
                plain.append((tensor, key, _to(_take(tensor.detach(), positions), _float64)))
        return plain

    def _unchanged(self, made: list[torch.Tensor], plain: list[Any]) -> list[torch.Tensor]:
        """The results that equal an input not derived from the kernels (as it was before the
        operator): what the kernels' results added was negligible, so they stay PyTorch's."""
        if not plain:
            return []
        kept = []
        with self._quiet():
            for tensor in made:
                if tensor.numel() < MIN_ELEMENTS or tensor.is_complex():
                    continue
                key, positions = self._key_positions(tensor)
                now = _to(_take(tensor.detach(), positions), _float64)
                for _, plain_key, before in plain:
                    if plain_key != key or bool(_all(_eq(before, before[0]))):
                        continue
                    if bool(_all(_abs(now - before) <= NEGLIGIBLE * (1 + _abs(before)))):
                        kept.append(tensor)
                        break
        return kept

    def _key_positions(self, tensor: torch.Tensor) -> tuple[tuple[int, torch.device], torch.Tensor]:
        key = (tensor.numel(), tensor.device)
        if key not in self._positions:
            if tensor.device not in self._generator:
                generator = torch.Generator(device=tensor.device)
                generator.manual_seed(secrets.randbits(63))
                self._generator[tensor.device] = generator
            count = min(SAMPLE_POSITIONS, tensor.numel())
            self._positions[key] = _randint(
                0, tensor.numel(), (count,), generator=self._generator[tensor.device], device=tensor.device
            )
        return key, self._positions[key]

    def _remember(self, operator: str, tensor: torch.Tensor) -> None:
        key, positions = self._key_positions(tensor)
        self._samples.append(_Sample(operator, key, _to(_take(tensor.detach(), positions), _float64)))

    def unseen(self, outputs: list[Any]) -> list[int]:
        """The outputs that neither the candidate's kernels nor any operator of this call
        wrote: computed where the trace cannot see (another thread, NumPy) or not at all."""
        return [
            index
            for index, output in enumerate(outputs)
            if type(output) is torch.Tensor
            and output.numel() > 0
            and (pointer := _storage(output)) is not None
            and pointer not in self._made
            and pointer not in self._written
            and pointer not in self._derived
        ]

    def matches(self, outputs: list[Any]) -> list[PyTorchMatch]:
        """The remembered PyTorch results that equal an output at every sampled position."""
        found: list[PyTorchMatch] = []
        with self._quiet():
            for index, output in enumerate(outputs):
                if type(output) is not torch.Tensor or output.numel() < MIN_ELEMENTS or output.is_complex():
                    continue
                key = (output.numel(), output.device)
                positions = self._positions.get(key)
                if positions is None:
                    continue
                final = _to(_take(output.detach(), positions), _float64)
                if not bool(_all(_isfinite(final))) or bool(_all(_eq(final, final[0]))):
                    continue
                for sample in self._samples:
                    if sample.key != key or not bool(_all(_isfinite(sample.values))):
                        continue
                    close = _abs(sample.values - final) <= LOOSE_TOLERANCE * (1 + _abs(final))
                    if bool(_all(close)):
                        found.append(
                            PyTorchMatch(
                                operator=sample.operator[:256],
                                output=index,
                                positions=[int(p) for p in positions.tolist()],
                                values=[float(v) for v in sample.values.tolist()],
                            )
                        )
                        if sum(1 for m in found if m.output == index) >= MAX_MATCHES_PER_OUTPUT:
                            break
        self._samples = []
        return found
