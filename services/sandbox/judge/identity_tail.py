"""Whether the reference's own forward ends in steps that leave an earlier result as it was.

A task may end in operators that are the identity on its inputs: a clamp whose bounds the
values never reach, reductions over a dimension of size 1 (KernelBench's level-2 problem 18
ends in four). A candidate that leaves the earlier steps to PyTorch and does that tail in a
kernel copies PyTorch's result, and its output equals a tensor PyTorch made: what the judge
otherwise takes for "PyTorch computed the output" is the task's own shape there. Asked only
where a candidate's call would be a hack for it, the reference's forward runs once more, on
a model built for the purpose, under a dispatch mode that samples every result an operator makes (or
writes in place); an output equal at every sampled position to an earlier result of as many
elements has such a tail.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from services.sandbox.shared.runner import ModelRunner, flatten_outputs
from services.sandbox.wire.judge_candidate import RunSpec

# Positions sampled per result, spread evenly over its elements.
_SAMPLES = 256


def _storage(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().data_ptr()


class _ResultSamples(TorchDispatchMode):
    """Samples, in order, of what each operator made afresh or wrote in place (a view of an
    input is no result of its own)."""

    def __init__(self) -> None:
        super().__init__()
        self.samples: list[tuple[int, int, torch.Tensor, torch.Tensor]] = []  # storage, elements, positions, values

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        inputs = [leaf for leaf in tree_leaves((args, kwargs)) if isinstance(leaf, torch.Tensor)]
        read = {_storage(t) for t in inputs}
        made = [t for t in tree_leaves(result) if isinstance(t, torch.Tensor) and _storage(t) not in read]
        schema = getattr(func, "_schema", None)
        written = inputs if schema is not None and schema.is_mutable else []
        for tensor in [*made, *written]:
            self._sample(tensor)
        return result

    def _sample(self, tensor: torch.Tensor) -> None:
        elements = tensor.numel()
        if elements == 0 or tensor.is_complex():
            return
        positions = torch.linspace(0, elements - 1, min(elements, _SAMPLES), device=tensor.device).long()
        values = tensor.detach().reshape(-1)[positions].clone()
        self.samples.append((_storage(tensor), elements, positions, values))


def _earlier_equal(samples: list[tuple[int, int, torch.Tensor, torch.Tensor]], output: torch.Tensor) -> bool:
    """Whether a result before the last one written into ``output``'s memory equals it."""
    storage, flat = _storage(output), output.detach().reshape(-1)
    last = max((i for i, sample in enumerate(samples) if sample[0] == storage), default=len(samples))
    return any(
        elements == flat.numel() and torch.equal(flat[positions], values)
        for _, elements, positions, values in samples[:last]
    )


def has_identity_tail(runner: ModelRunner, spec: RunSpec) -> bool:
    """Whether the reference's forward for ``spec`` returns an output equal to a result it made
    before (module docstring). Its model is built anew and the random state restored, so that
    the reference's own runs (their models, batch norm statistics, dropout draws) see nothing
    of this one; a task this cannot run again answers no."""
    devices = [runner.device] if runner.device.type == "cuda" else []
    try:
        with torch.random.fork_rng(devices=devices):  # building and drawing seed the generators
            model, inputs = runner.build(spec), runner.inputs(spec)
            with _ResultSamples() as recorder:
                outputs = flatten_outputs(runner.forward(model, inputs, spec))
        return any(isinstance(o, torch.Tensor) and _earlier_equal(recorder.samples, o) for o in outputs)
    except Exception:  # noqa: BLE001 - the task's own failure: no tail known, the verdict stands as before
        return False
