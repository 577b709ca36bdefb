"""The inputs a correctness check uses: the variants of the request's correctness profile (the
task's inputs, other seeds, scaled values, resized shapes, another precision), the shrunken
sizes of the first run, and each variant planned to fit in device memory (judge/memory.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from services.sandbox.judge.memory import fits, gib
from services.sandbox.judge.reference import TaskFailed
from services.sandbox.settings import Tolerance
from services.sandbox.shared.evaluation import InputVariant
from services.sandbox.shared.runner import DTYPES
from services.sandbox.shared.task_source import resized_plans, tiny_plans
from services.sandbox.wire.judge_candidate import RunSpec

if TYPE_CHECKING:
    from services.sandbox.judge.funnel import Evaluation

# Halving the size constants this many times at most to fit a variant in device memory.
_SHRINK_STEPS = 6
# The float-input scales tried in turn where the task's output does not depend on its inputs
# (every value saturated, as ReLU(x - 2) of inputs in [0, 1)): the configured scale times these.
_WIDER = (1.0, 4.0, 16.0, 64.0)


@dataclass(frozen=True)
class Variant:
    """One correctness check's inputs: the candidate's spec and the reference's (they differ
    for another precision), the dtypes expected back, or why the check does not apply."""

    kind: InputVariant
    description: str
    candidate: RunSpec
    reference: RunSpec
    expected_dtypes: tuple[torch.dtype, ...] | None = None
    not_applicable: str = ""
    widened: bool = False  # float inputs scaled beyond the configured scale (scaled_informatively)


def describe_constants(constants: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in constants.items()) or "task sizes"


def finite(outputs: Sequence[torch.Tensor]) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in outputs if t.is_floating_point())


def one_valued(outputs: Sequence[torch.Tensor], tolerance: Callable[[torch.dtype], Tolerance]) -> bool:
    """Whether every output holds one value, within the tolerance of its dtype (``tolerance``)
    for floats: then no element can be told from another."""
    for output in outputs:
        if output.numel() == 0:
            continue
        values = output.detach()
        if values.is_complex():
            values = torch.view_as_real(values)
        elif values.dtype == torch.bool:
            values = values.to(torch.uint8)
        low, high = (float(v) for v in torch.aminmax(values))
        if not values.is_floating_point():
            if low != high:
                return False
            continue
        allowed = tolerance(output.dtype)
        if not high - low <= allowed.atol + allowed.rtol * max(abs(low), abs(high)):
            return False
    return True


class VariantPlanner:
    """Plans one evaluation's inputs from its task, settings and profile, asking its reference
    which sizes and dtypes the task can run."""

    def __init__(self, evaluation: Evaluation) -> None:
        self.evaluation = evaluation
        self.task, self.settings, self.plan = evaluation.task, evaluation.settings, evaluation.plan
        self.device, self.reference = evaluation.device, evaluation.reference

    def tiny_spec(self) -> RunSpec:
        if not self.plan.shrink:
            return self.evaluation.spec()
        sizes = self.task.sizes(self.settings.correctness.size_constant_min)
        for plan in tiny_plans(sizes, self.settings.correctness.tiny_size):
            spec = self.evaluation.spec(plan)
            try:
                if finite(self.evaluation.reference_run(spec).outputs):
                    return spec
            except TaskFailed:
                continue
        return self.evaluation.spec()

    def variants(self) -> list[Variant]:
        correctness = self.settings.correctness
        variants: list[Variant] = []
        for name in self.plan.variants:
            if name == "original":
                spec = self.evaluation.spec()
                variants.append(Variant(InputVariant.ORIGINAL, f"task sizes, seed {spec.input_seed}", spec, spec))
            elif name == "seed":
                spec = self.evaluation.spec(weight=10, inputs=11)
                variants.append(
                    Variant(
                        InputVariant.SEED, f"weights seed {spec.weight_seed}, inputs seed {spec.input_seed}", spec, spec
                    )
                )
            elif name == "scaled":
                spec = self.evaluation.spec(inputs=21, scale=correctness.scale)
                variants.append(Variant(InputVariant.SCALED, f"float inputs x{spec.scale:g}", spec, spec))
            elif name == "resized":
                variants.append(self._resized())
            elif name == "dtype":
                variants.append(self._dtype())
        for extra in range(self.plan.extra_seeds):
            spec = self.evaluation.spec(weight=10 * (extra + 2), inputs=10 * (extra + 2) + 1)
            variants.append(
                Variant(
                    InputVariant.SEED, f"weights seed {spec.weight_seed}, inputs seed {spec.input_seed}", spec, spec
                )
            )
        return variants

    def informative(self, spec: RunSpec, outputs: Sequence[torch.Tensor], other_seed: int) -> bool:
        """Whether the reference's ``outputs`` on ``spec`` tell one candidate result from
        another: they differ from its outputs on other inputs (those of ``other_seed``), and
        hold more than one value, or one value (a scalar, a broadcast mean) that moves with the
        inputs. Not so where the output does not depend on the inputs (KernelBench's level-2
        problem 80 subtracts the mean of one element, always 0; a softmax over 20,000 columns
        is 1/20,000 everywhere within the tolerance) or where every value saturates on these
        inputs (its level-2 problem 9 is ReLU(x - 2) of sums that mostly stay below 2 at the
        task's scale)."""
        try:
            others = self.evaluation.reference_run(dataclasses.replace(spec, input_seed=other_seed)).outputs
        except TaskFailed:
            return True
        if self.evaluation.compare(others, list(outputs))[0].passed:
            return False
        return not one_valued(outputs, self.evaluation.tolerance) or one_valued(others, self.evaluation.tolerance)

    def widened(self, spec: RunSpec, other_seed: int) -> RunSpec | None:
        """``spec`` at the first scale of float inputs above its own (the configured scale times
        _WIDER) at which the reference's outputs are finite and ``informative``; None when
        there is none."""
        for factor in _WIDER:
            scale = self.settings.correctness.scale * factor
            if scale <= spec.scale:
                continue
            wider = dataclasses.replace(spec, scale=scale)
            try:
                outputs = self.evaluation.reference_run(wider).outputs
            except TaskFailed:
                return None
            if not finite(outputs):
                return None
            if self.informative(wider, outputs, other_seed):
                return wider
        return None

    def scaled_informatively(self, variant: Variant, outputs: Sequence[torch.Tensor], other_seed: int) -> Variant:
        """The scaled variant, at a larger scale where its outputs are not ``informative`` at
        the configured one (a kernel returning the one value there would pass every check),
        said in its description; unchanged otherwise. A knock-out on widened inputs measures
        saturation as much as work: its share of the output does not scale coverage."""
        if not one_valued(outputs, self.evaluation.tolerance) or self.informative(
            variant.reference, outputs, other_seed
        ):
            return variant
        wider = self.widened(variant.reference, other_seed)
        if wider is None:
            return variant
        return dataclasses.replace(
            variant,
            description=f"float inputs x{wider.scale:g} (at x{variant.reference.scale:g} the task's output is one "
            "value on these inputs)",
            candidate=dataclasses.replace(variant.candidate, scale=wider.scale),
            reference=wider,
            widened=True,
        )

    def _resized(self) -> Variant:
        sizes = self.task.sizes(self.settings.correctness.size_constant_min)
        plans = resized_plans(sizes)
        for plan in plans:
            spec = self.evaluation.spec(plan, inputs=31)
            try:
                outputs = self.evaluation.reference_run(spec).outputs
            except TaskFailed:
                continue
            if finite(outputs):
                return Variant(InputVariant.RESIZED, describe_constants(plan), spec, spec)
        reason = "no size constants to change" if not sizes else "the reference fails at every other size tried"
        spec = self.evaluation.spec(inputs=31)
        return Variant(InputVariant.RESIZED, "other sizes", spec, spec, not_applicable=reason)

    def _dtype(self) -> Variant:
        correctness = self.settings.correctness
        other = correctness.dtype_cuda if self.device.type == "cuda" else correctness.dtype_cpu
        original = self.evaluation.reference_run(self.evaluation.spec()).outputs
        if all(t.dtype == DTYPES[other] for t in original if t.is_floating_point()):
            other = "float32"
        candidate = self.evaluation.spec(inputs=41, dtype=other)
        reference = self.evaluation.spec(inputs=41, round_to=other)
        try:
            probe = self.evaluation.reference_run(candidate).outputs
        except TaskFailed:
            return Variant(
                InputVariant.DTYPE, other, reference, reference, not_applicable=f"the reference does not run in {other}"
            )
        return Variant(InputVariant.DTYPE, other, candidate, reference, tuple(t.dtype for t in probe))

    def fitted(self, variant: Variant) -> Variant:
        """The variant as it fits in the device memory it may plan with (``_budget``) next to
        the judge's copies: the judge's caches are dropped first where free memory, not the
        variant's share of the device, is what it lacks (freeing them cannot help otherwise,
        and costs the allocator's cache); then sizes are halved (said in the description) until
        the call fits; a variant with no sizes to shrink, or under a profile that never shrinks
        the task's sizes (its first run checked them already), is skipped with the reason."""
        need = self.evaluation.footprint(variant.reference)
        budget = self._budget(variant)
        if fits(need, budget):
            return variant
        share = self._share(variant)
        if share is None or budget is None or budget < share:
            # the variant's own reference run (the footprint made it) is kept for its check; it
            # is the judge's copy of the outputs that ``need`` counts
            kept = self.reference.drop_cache(keep=variant.reference)
            budget = self._budget(variant)
            if fits(need, None if budget is None else budget + kept):
                return variant
            if kept:  # smaller sizes need its room, not its result
                self.reference.drop_cache()
                budget = self._budget(variant)
        if not self.plan.shrink:
            return dataclasses.replace(
                variant,
                not_applicable=f"does not fit in device memory next to the judge's copies ({gib(need.need_bytes())} "
                f"needed, {gib(budget or 0)} free), and profile {self.plan.name} never shrinks the task's sizes",
            )
        sizes = self.task.sizes(self.settings.correctness.size_constant_min)
        current = dict(variant.candidate.constants) or dict(sizes)
        for _ in range(_SHRINK_STEPS):
            current = {name: _halved(value) for name, value in current.items()}
            if not current:
                break
            shrunk = Variant(
                variant.kind,
                f"{variant.description}; shrunk to fit device memory "
                f"({gib(need.need_bytes())} needed, {gib(budget or 0)} available to it): "
                f"{describe_constants(current)}",
                dataclasses.replace(variant.candidate, constants=tuple(sorted(current.items()))),
                dataclasses.replace(variant.reference, constants=tuple(sorted(current.items()))),
                variant.expected_dtypes,
            )
            if fits(self.evaluation.footprint(shrunk.reference), self._budget(variant)):
                return shrunk
        return dataclasses.replace(
            variant,
            not_applicable=(
                "does not fit in device memory next to the judge's copies "
                f"({gib(need.need_bytes())} needed, {gib(budget or 0)} available to it)"
            ),
        )

    def _budget(self, variant: Variant) -> int | None:
        """The device memory a variant may plan with (None: any, on CPU): what is free, and at
        most its ``_share``."""
        free = self.evaluation.free_bytes()
        share = None if free is None else self._share(variant)
        return free if share is None else min(free, share)

    def _share(self, variant: Variant) -> int | None:
        """The most device memory a variant other than the task's own inputs may plan with,
        under a profile that shrinks: ``variant_memory_share`` of the device (None: no cap). A
        full-size KernelBench call needs tens of GiB; other values, sizes and dtypes are
        checked as well at a fraction of those sizes in a fraction of the time."""
        if variant.kind == InputVariant.ORIGINAL or not self.plan.shrink:
            return None
        return int(self.evaluation.device_bytes() * self.settings.correctness.variant_memory_share)


def _halved(size: int) -> int:
    """Half a size constant, odd when it was odd: an odd size (the resized variant's) is what
    finds a kernel that leaves its last block unmasked, and an even half of it would not."""
    return max(1, (size // 2) | (size & 1))
