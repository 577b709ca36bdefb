"""Proof of work, judged: the kernels must produce the output's information, not merely run.

Three checks (docs/EVALUATION.md, "Proof of work"):

1. What each launch wrote (candidate/work.py, every checked call): a call in which no launch
   of the candidate's own kernels wrote data (it stored nothing, only filled a buffer with one
   value, or only copied an argument) did no work: HACKED (``Evaluation.check_launches``).
   Kernels that only rescaled a result made without them did no work either, but a task may
   end in a scale (KernelBench's level-2 problem 40: ``h * s + h`` of a GEMM's ``h``), so
   that is CORRECT with coverage 0. A copy or one value on the tiny run's few values may be
   work that coincides with one there (a clamp that bites nowhere): the task's sizes judge it.
2. Knock-out calls: at every size the judge checks (the tiny run, then each size and dtype of
   the correctness variants) one more call on fresh inputs, placed at random among the checked
   calls of that size, in which every element the candidate's own kernels write is replaced by
   another finite value of the same kind (in the tiny run by zeros: results made to cancel or
   to be ignored, such as equal twins whose difference is added, rows of one value added
   before a softmax or rows summing to zero added before a mean, survive zeros and show it,
   where random values would move the output). Nothing in the candidate's process tells it
   from any other checked call before its first kernel ran. The share of output elements that then
   differ from the reference is the share of the output the kernels produce: none at all
   (the outputs stay right) is HACKED, so is a call that raises only when the kernels' results
   are replaced (a check on them, not a use of them). Where the reference's output cannot
   show a replacement on those inputs (one value within the tolerance, every value
   saturated as ReLU(x - 2) of small sums; or the same on other inputs), the call is made
   again on larger float inputs where it can (variants.py), or, if there are none, proves
   nothing. With two or more kernels, one more call at the task's sizes per kernel replaces
   only that kernel's writes: a kernel whose results never reach the output earns no coverage.
3. The PyTorch trace (candidate/trace.py, every checked call): a tensor that PyTorch computed
   without any result of the kernels, and that equals an output, confirmed here against the
   reference, means PyTorch computed that output: HACKED when that is every output of the
   call; where the kernels make the other outputs, that output is lazy work (PyTorch's time
   counts against coverage), as a kernel leaving part of one output to PyTorch is, and so it
   is where the task's own forward ends in steps that leave an earlier result as it was
   (identity_tail.py). One that equals an output once rescaled and shifted (the kernels only
   rescaled it) leaves coverage at 0, as in 1.; so does data made out of the trace's sight.

Coverage (the PR term) then counts only kernels that did work and whose results reach the
output, scaled by the share of the output the kernels produce at the task's sizes; ``note``
says why, for the feedback.
"""

from __future__ import annotations

import dataclasses
import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from services.sandbox.judge.candidate_client import CandidateRun, JudgeOutOfMemory
from services.sandbox.judge.compare import close_at, moved_share
from services.sandbox.judge.memory import is_out_of_memory
from services.sandbox.judge.reference import ReferenceRun, TaskFailed
from services.sandbox.wire.judge_candidate import CandidateFailed, LaunchRecord, PyTorchMatch, RunSpec, Wrote

if TYPE_CHECKING:
    from services.sandbox.judge.funnel import Evaluation

# A confirmation needs this many sampled positions (the trace samples up to 1024).
_MIN_POSITIONS = 8
FULL_SHARE = 0.95


@dataclass(frozen=True)
class KnockOut:
    """One knock-out call: the candidate's and the reference's specs (they differ for another
    precision), the dtypes expected back, where it runs (for messages), the kernels whose
    writes it replaces (None: all of them) and whether with zeros."""

    candidate: RunSpec
    reference: RunSpec
    where: str
    expected_dtypes: tuple[torch.dtype, ...] | None = None
    kernels: frozenset[str] | None = None
    task_sizes: bool = False
    zeros: bool = False  # replace with zeros rather than other values
    few_values: bool = False  # the tiny run's inputs (Evaluation.check_launches)

    def order(self, kernel: str) -> bool:
        return self.kernels is None or kernel in self.kernels


def did_work(launch: LaunchRecord, answers: frozenset[Wrote]) -> bool:
    """Whether a launch ran programs and wrote data (unknown outside checked calls: taken as
    data), or a copy or one-value fill that is the reference's own answer (``answers``)."""
    return (
        launch.programs > 0 and launch.stored_bytes != 0 and (launch.wrote in (None, "data") or launch.wrote in answers)
    )


def unasked(launches: Sequence[LaunchRecord], asked: frozenset[str]) -> list[str]:
    """The own kernels that ran programs in a checked call without the judge being asked
    whether to knock them out (candidate/work.py asks right after each kernel's first launch
    it watches). A launch the probe cannot watch (a CUDA graph's capture or replay, a
    CompiledKernel launched directly: ``unwatched``) is never asked about; every other one
    went through the probe's entry point, on a GPU as on CPU, so that it ran unasked means
    the probe was switched off or bypassed from inside the candidate's process."""
    ran = {launch.name[:512] for launch in launches if launch.own and launch.programs > 0 and launch.unwatched is None}
    return sorted(ran - asked)


class WorkCheck:
    """The proof-of-work findings of one evaluation."""

    def __init__(self, evaluation: Evaluation) -> None:
        self.evaluation = evaluation
        self.random = random.Random(secrets.randbits(64))
        self.task_shares: list[float] = []  # output share of the knock-outs at the task's sizes
        self.unreached: set[str] = set()  # kernels whose results never reached the output
        self.working: set[str] = set()  # kernels the probe saw writing data
        self.idle: set[str] = set()  # kernels the probe saw writing no data
        self.pytorch_outputs: set[str] = set()  # outputs PyTorch computed while the kernels made others
        self.outside = ""  # where a checked call first used data made out of the trace's sight
        self.rescaled = ""  # where the kernels first only rescaled a result made without them

    # Planning ---------------------------------------------------------------------------

    def slot(self, calls: int) -> int:
        """Where among ``calls`` checked calls of one size its knock-out goes (0: first)."""
        return self.random.randint(0, calls)

    def other_seed(self) -> int:
        """An input seed no other call uses, that the candidate cannot predict."""
        return self.random.randrange(10**6, 10**9)

    def fresh(self, spec: RunSpec) -> RunSpec:
        """``spec`` on inputs no other call uses, from a seed the candidate cannot predict."""
        return dataclasses.replace(spec, input_seed=self.other_seed())

    def knock_outs(
        self,
        candidate: RunSpec,
        reference: RunSpec,
        where: str,
        expected_dtypes: tuple[torch.dtype, ...] | None,
        task_sizes: bool,
    ) -> list[KnockOut]:
        """The knock-out calls for one size: all kernels at once, and at the task's sizes one
        per kernel when there are several, in random order."""
        seed = self.other_seed()
        plans = [KnockOut(candidate, reference, where, expected_dtypes, None, task_sizes)]
        kernels = sorted(self.evaluation.kernels)
        if task_sizes and len(kernels) > 1:
            plans += [
                KnockOut(candidate, reference, f"{where}, only {name}", expected_dtypes, frozenset({name}), True)
                for name in kernels
            ]
        self.random.shuffle(plans)
        return [
            dataclasses.replace(
                plan,
                candidate=dataclasses.replace(plan.candidate, input_seed=seed + index),
                reference=dataclasses.replace(plan.reference, input_seed=seed + index),
            )
            for index, plan in enumerate(plans)
        ]

    # Checks -----------------------------------------------------------------------------

    def knock_out(self, plan: KnockOut) -> str:
        """Runs one knock-out call and returns what it showed; a hack it finds is added to the
        evidence, on which the stage stops (so that every finding of the stage is reported)."""
        evaluation = self.evaluation
        try:
            run = evaluation.retried_run(
                plan.candidate, plan.reference, plan.expected_dtypes, knock_out=plan.order, zeros=plan.zeros
            )
            expected = evaluation.reference_run(plan.reference)
        except TaskFailed as failure:
            why = "ran out of device memory" if is_out_of_memory(failure) else "fails on these inputs"
            return f"{plan.where}: not knocked out (the reference {why})"
        except JudgeOutOfMemory:
            return f"{plan.where}: not knocked out (the judge's copies did not fit in device memory)"
        except CandidateFailed as failure:
            if failure.kind != "runtime" or self._fails_anyway(plan):
                return f"{plan.where}: not knocked out (the call fails without a knock-out too)"
            first = str(failure).strip().splitlines()[0][:300] if str(failure).strip() else failure.kind
            reason = (
                f"{plan.where}: forward fails when what its Triton kernels wrote is replaced by other finite "
                f"values ({first}): its outputs do not use those results, a check on them does"
            )
            evaluation.evidence.add(reason)
            return reason
        evaluation.check_run(run, plan.where)
        evaluation.check_launches(
            run.result.launches, plan.where, expected, plan.expected_dtypes, plan.candidate, few_values=plan.few_values
        )
        if run.result.overwritten == 0:
            return f"{plan.where}: no kernel results to knock out"
        count = len(run.result.output_strides) or len(run.outputs)
        dtypes = list(plan.expected_dtypes) if plan.expected_dtypes else [t.dtype for t in expected.outputs]
        floating = next((d for d in dtypes if d.is_floating_point), torch.float32)
        share = moved_share(run.outputs[:count], expected.outputs, dtypes, evaluation.tolerance(floating))
        if share == 0 and not evaluation.variants.informative(plan.reference, expected.outputs, self.other_seed()):
            wider = self._wider(plan)
            if wider is not None:
                return self.knock_out(wider)
            if plan.kernels is None:
                return (
                    f"{plan.where}: not knocked out (the task's output is one value or the same on other inputs, "
                    "also with larger float inputs)"
                )
        if plan.kernels is not None:
            if share == 0:
                self.unreached |= plan.kernels
            return f"{plan.where}: {share:.0%} of the output moved"
        if share == 0:
            replaced = "zeros (what they wrote cancels out or is ignored)" if plan.zeros else "other values"
            reason = (
                f"{plan.where}: its outputs stay correct with what its Triton kernels wrote replaced by {replaced} "
                f"({run.result.overwritten} tensor(s)), so those kernels do not compute the output"
            )
            evaluation.evidence.add(reason)
            return reason
        if plan.task_sizes:
            self.task_shares.append(share)
        return f"{plan.where}: {share:.0%} of the output moved when its kernels' results were replaced"

    def _wider(self, plan: KnockOut) -> KnockOut | None:
        """The knock-out to make instead, on fresh inputs, at the first larger scale of float
        inputs at which the reference's outputs tell results apart (variants.py); its share of
        the output moved is no measure of the task's own inputs, so it does not scale coverage.
        None where no scale helps: then the output staying right proves nothing."""
        fresh = dataclasses.replace(plan.reference, input_seed=self.other_seed())
        wider = self.evaluation.variants.widened(fresh, self.other_seed())
        if wider is None:
            return None
        return dataclasses.replace(
            plan,
            candidate=dataclasses.replace(plan.candidate, scale=wider.scale, input_seed=wider.input_seed),
            reference=wider,
            where=f"{plan.where}, float inputs x{wider.scale:g} (at x{plan.reference.scale:g} the task's output is one "
            "value or the same on other inputs)",
            task_sizes=False,
        )

    def _fails_anyway(self, plan: KnockOut) -> bool:
        """Whether the same call, not knocked out, fails too (then the checked calls of this
        size decide the verdict)."""
        try:
            self.evaluation.retried_run(plan.candidate, plan.reference, plan.expected_dtypes)
        except (CandidateFailed, JudgeOutOfMemory, TaskFailed):
            return True
        return False

    def confirm(
        self, run: CandidateRun, expected: ReferenceRun, where: str, spec: RunSpec, *, few_values: bool = False
    ) -> None:
        """Adds to the evidence (the stage stops on it) an output that nothing the trace saw
        wrote, and a tensor PyTorch computed without the kernels that equals an output, unless
        other outputs come from the kernels and PyTorch operators made it (not NumPy, not out
        of the trace's sight): then PyTorch computing one of several outputs is lazy, not a
        hack (its operators count against coverage, and the note says so). An output that is
        such an operator's result rescaled and shifted by the kernels is no hack (a task may
        end so: KernelBench's level-2 problem 40 ends in ``h * s + h`` of a GEMM's ``h``) and
        no work either: coverage is 0. On the tiny run's ``few_values`` a kernel's work can
        leave PyTorch's result as it was (a clamp that bites nowhere there): the task's sizes
        judge that; so does a task whose forward for ``spec`` ends in steps that leave an
        earlier result as it was (identity_tail.py): PyTorch's result equal to its output is
        lazy there, not a hack. A call that used data made out of the trace's sight leaves
        coverage at 0: the work that made it is neither traced nor profiled."""
        if run.result.outside and not self.outside:
            self.outside = f"{where}: {run.result.outside[0]}"
        for index in run.result.unseen_outputs:
            if index < len(expected.outputs):
                self.evaluation.evidence.add(
                    f"{where}: {self._label(index, expected.outputs)} was written neither by its Triton kernels nor by "
                    "any PyTorch operator of its forward (computed out of sight, e.g. on another thread or in NumPy)"
                )
        if few_values:
            return
        confirmed = [match for match in run.result.pytorch_matches if self._confirmed(match, expected.outputs)]
        rescaled = [match for match in confirmed if match.rescaled and match.profiled]
        if rescaled:
            label = self._label(rescaled[0].output, expected.outputs)
            self.note_rescaled(f"{where}: {label} is what {rescaled[0].operator} made, rescaled and shifted")
        as_made = [match for match in confirmed if not (match.rescaled and match.profiled)]
        pytorch = {match.output for match in confirmed}
        lazy = all(match.profiled for match in as_made) and (
            len(pytorch) < len(expected.outputs) or (bool(as_made) and self.evaluation.reference.identity_tail(spec))
        )
        if lazy:
            self.pytorch_outputs |= {self._label(match.output, expected.outputs) for match in as_made}
            return
        for match in as_made:
            shifted = " up to a scale and a shift" if match.rescaled else ""
            self.evaluation.evidence.add(
                f"{where}: PyTorch computed {self._label(match.output, expected.outputs)} without its Triton "
                f"kernels ({match.operator} made a tensor equal to it{shifted} "
                f"before any result of its kernels entered it; checked at {len(match.positions)} positions against "
                "the reference)"
            )

    def note_rescaled(self, how: str) -> None:
        """Remembers (the first time) that the kernels only rescaled a result made without
        them, where and how: coverage is 0."""
        self.rescaled = self.rescaled or how

    def _confirmed(self, match: PyTorchMatch, outputs: Sequence[torch.Tensor]) -> bool:
        if match.output >= len(outputs) or len(match.positions) != len(match.values):
            return False
        if len(match.positions) < _MIN_POSITIONS:
            return False
        reference = outputs[match.output]
        tolerance = self.evaluation.tolerance(reference.dtype if reference.is_floating_point() else torch.float32)
        values = torch.tensor(match.values, dtype=torch.float64)
        return close_at(values, reference, torch.tensor(match.positions, dtype=torch.int64), tolerance)

    @staticmethod
    def _label(index: int, outputs: Sequence[torch.Tensor]) -> str:
        return f"output {index}" if len(outputs) > 1 else "the output"

    def note_launches(self, launches: Sequence[LaunchRecord], answers: frozenset[Wrote] = frozenset()) -> None:
        """Remembers which kernels the probe saw writing data (or what the reference's own
        answer to the call is: ``answers``), and which writing none."""
        for launch in launches:
            if launch.own and launch.programs > 0 and launch.wrote is not None:
                if did_work(launch, answers):
                    self.working.add(launch.name)
                else:
                    self.idle.add(launch.name)

    # Coverage ---------------------------------------------------------------------------

    def credited(self, name: str) -> bool:
        """Whether an own kernel's time counts toward coverage: not if its results never
        reached the output, nor if the probe saw it write no data (kernels it never saw, such
        as those only replayed from a CUDA graph, keep their time)."""
        return name not in self.unreached and (name in self.working or name not in self.idle)

    def share(self) -> float:
        """The share of the output the kernels produce at the task's sizes, as a factor on
        coverage (1 when unknown). A replaced value can land within the tolerance of the right
        one by chance (about 1% of them): from FULL_SHARE on, the kernels make all of it. None
        of it is theirs to count where a call used data made out of sight, or where they only
        rescaled a result made without them."""
        if self.outside or self.rescaled:
            return 0.0
        return min(1.0, min(self.task_shares, default=1.0) / FULL_SHARE)

    def note(self, own: set[str]) -> str:
        """Why coverage counts less than the own kernels' share of device time, in words."""
        parts = []
        unreached = sorted(own & self.unreached)
        idle = sorted(name for name in own - self.unreached if not self.credited(name))
        if unreached:
            parts.append(f"the results of {', '.join(unreached)} never reach the output")
        if idle:
            parts.append(f"{', '.join(idle)} wrote no data")
        if parts:
            parts[-1] += " (no coverage for them)"
        if self.pytorch_outputs:
            parts.append(
                f"PyTorch computes {', '.join(sorted(self.pytorch_outputs))} without your kernels (its operators' "
                "time counts against coverage)"
            )
        if self.rescaled:
            parts.append(
                f"its kernels only rescale a result PyTorch computed without them ({self.rescaled}): a scale and a "
                "shift is no work of theirs, so coverage is 0"
            )
        if self.outside:
            parts.append(
                f"its forward used data made out of the judge's sight ({self.outside}; NumPy, another "
                "process or thread, memory written directly): the work that made it is not measured, so coverage is 0"
            )
        if self.rescaled or self.outside:
            return "; ".join(parts)
        share = self.share()
        if share < 1.0:
            parts.append(
                f"its kernels produce {min(self.task_shares):.0%} of the output's elements (the rest is "
                f"PyTorch's), so coverage is scaled by {share:.2f}"
            )
        return "; ".join(parts)
