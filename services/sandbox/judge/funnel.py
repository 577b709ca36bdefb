"""The evaluation funnel, run by the judge: stages in order, stopping at the first failure.

syntax -> load (import, build ModelNew, while the judge computes the reference) -> compile
(first run; on CPU also an ahead-of-time compile for sm_90) -> tiny run (four modes, own
Triton kernels every time, tiny correctness) -> correctness (input variants of the request's
correctness profile, each planned to fit in device memory) -> timing (interleaved with the
reference; launch-bound models replayed from CUDA graphs) -> profile (from the checked calls
at the task's sizes). Every checked candidate call is checked for launches of the
candidate's own kernels and what they wrote, late writes, inputs modified unlike the
reference, outputs laid out unlike the reference's, PyTorch results that already equal an
output, and tampering (services/sandbox/candidate/harness.py); at every size checked, a
knock-out call placed at random among them shows how much of the output the kernels make.

The correctness inputs are planned in variants.py, the timing stage is timing.py's, the
proof-of-work checks are work.py's, hack evidence is collected in evidence.py, and stages
end as stages.py says.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Sequence

import torch

from services.profiler import KernelTime, ProfileSummary, kernel_profiles, method, profile_summary
from services.sandbox.judge.candidate_client import (
    CandidateClient,
    CandidateHacked,
    CandidateLost,
    CandidateRun,
    JudgeOutOfMemory,
)
from services.sandbox.judge.compare import Comparison, compare_outputs
from services.sandbox.judge.correctness_profiles import plan_for
from services.sandbox.judge.evidence import HackEvidence
from services.sandbox.judge.memory import Footprint, fits, free_bytes, is_out_of_memory, total_bytes
from services.sandbox.judge.reference import Reference, ReferenceRun, TaskFailed
from services.sandbox.judge.stages import BadTask, Ended, NotJudged, Stop
from services.sandbox.judge.timing import TIMED_WORK_SHARE, TimingStage
from services.sandbox.judge.variants import Variant, VariantPlanner, describe_constants, finite
from services.sandbox.judge.work import KnockOut, WorkCheck, did_work, unasked
from services.sandbox.settings import SandboxSettings, Tolerance
from services.sandbox.shared.clock import Clock
from services.sandbox.shared.evaluation import (
    CorrectnessCheck,
    EvaluationRequest,
    InputVariant,
    Judgement,
    Stage,
    StageResult,
    StageStatus,
    TritonKernel,
    Verdict,
)
from services.sandbox.shared.runner import DTYPES
from services.sandbox.shared.task_source import TaskSource, syntax_error
from services.sandbox.wire.judge_candidate import (
    CandidateFailed,
    KernelCompile,
    LaunchRecord,
    Problem,
    ProfiledKernel,
    RunSpec,
    Wrote,
)

# Variants at the task's sizes: their checked calls give the profile (coverage).
_TASK_SIZED = (InputVariant.ORIGINAL, InputVariant.SEED, InputVariant.SCALED)
# Modes of the tiny run; the first is KernelBench's (a freshly built module is in training
# mode; the harness evaluates without autograd) and is the one compared with the reference.
_MODES = ((True, False), (False, False), (True, True), (False, True))


# What timed calls are held to (check_timed_work): the verb and the words for each measure.
_TIMED_MEASURES = {
    "programs": ("ran", "Triton programs its checked calls on inputs of the same sizes ran"),
    "bytes": ("stored", "bytes its kernels stored in its checked calls on inputs of the same sizes"),
}


def _work_of(launches: Sequence[LaunchRecord]) -> dict[str, Counter[str]]:
    """Programs per kernel of these launches, and bytes stored per kernel when every launch's
    are known (the interpreter's)."""
    work: dict[str, Counter[str]] = {"programs": Counter()}
    for launch in launches:
        work["programs"][launch.name] += launch.programs
    if launches and all(launch.stored_bytes is not None for launch in launches):
        work["bytes"] = Counter()
        for launch in launches:
            work["bytes"][launch.name] += launch.stored_bytes or 0
    return work


def _mode_name(train: bool, grad: bool) -> str:
    return f"{'train' if train else 'eval'} mode {'with' if grad else 'without'} autograd"


def _no_overlap(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Every element at an address of its own: the strides, sorted, each at least span the
    dimensions below them. Gaps are fine (a narrow view of a row-padded buffer, one chunk of a
    fused output); an ``expand()`` (stride 0) or a sliding window is not."""
    span = 1
    for size, stride in sorted(((n, s) for n, s in zip(shape, strides, strict=False) if n != 1), key=lambda p: p[1]):
        if stride < span:
            return False
        span = stride * size
    return True


def _layout_message(strides: Sequence[Sequence[int]], expected: Sequence[torch.Tensor]) -> str | None:
    """An output's elements must not share memory (each one is computed), unless the reference
    returns the very same layout (an expand() view, say): the candidate may mirror the
    reference, nothing else."""
    for index, (got, want) in enumerate(zip(strides, expected, strict=False)):
        if _no_overlap(want.shape, got) or tuple(got) == tuple(want.stride()):
            continue
        label = f"output {index}" if len(expected) > 1 else "the output"
        return (
            f"{label}'s elements overlap in memory (strides {tuple(got)}: an expand() or a sliding-window "
            f"view) and the reference's are not laid out that way (strides {tuple(want.stride())})"
        )
    return None


def _compiled_text(checked: Sequence[KernelCompile]) -> str:
    """What the CPU compile stage compiled: how many launch signatures of which kernels."""
    if not checked:
        return "no kernels launched, nothing to compile for sm_90"
    counts = Counter(k.name for k in checked)
    names = ", ".join(f"{name} (x{count})" if count > 1 else name for name, count in sorted(counts.items()))
    return (
        f"compiled {len(checked)} launch signature(s) of {len(counts)} kernel(s) for sm_90 "
        f"(CUDA target) without a GPU, from the source each ran: {names}"
    )


class Evaluation:
    """One candidate judged against one task; ``run()`` returns the judgement."""

    def __init__(
        self,
        request: EvaluationRequest,
        task: TaskSource,
        reference: Reference,
        candidate: CandidateClient,
        settings: SandboxSettings,
        device: torch.device,
        clock: Clock,
    ) -> None:
        self.request, self.task, self.reference, self.candidate = request, task, reference, candidate
        self.settings, self.device, self.clock = settings, device, clock
        options = request.options
        self.base_seed = options.seed if options.seed is not None else settings.seed
        self.plan = plan_for(options.correctness_profile, settings.correctness)
        self.evidence = HackEvidence()
        self.work = WorkCheck(self)
        self.checks: list[CorrectnessCheck] = []
        self.variants = VariantPlanner(self)
        self.timing = TimingStage(self)
        self.profile: ProfileSummary | None = None
        self.device_name = ""
        self.kernels: Counter[str] = Counter()
        self.programs: Counter[str] = Counter()
        # each checked call on the timed calls' model (the task's sizes, its weights): the
        # programs each own kernel that did work ran, and the bytes it stored where the
        # interpreter counts them, for what the timed calls must do too (check_timed_work)
        self.timed_model_work: list[dict[str, Counter[str]]] = []
        self.profiled: list[list[ProfiledKernel]] = []  # checked calls at the task's sizes
        # what every reference call at the task's sizes and dtype answered degenerately
        # (ReferenceRun.answers), for calls checked without their own reference (timed runs)
        self.task_answers: frozenset[Wrote] | None = None
        self._footprints: dict[tuple[object, ...], Footprint] = {}
        self._first_run: CandidateRun | None = None
        self._first_failure: CandidateFailed | None = None
        self.candidate_lost = False
        self.init_on_device = False
        self.tiny_spec = self.spec()

    # Specs ----------------------------------------------------------------------------------

    def spec(
        self,
        constants: dict[str, int] | None = None,
        *,
        weight: int = 0,
        inputs: int = 1,
        train: bool = True,
        grad: bool = False,
        **kwargs: object,
    ) -> RunSpec:
        return RunSpec(
            constants=tuple(sorted((constants or {}).items())),
            weight_seed=self.base_seed + weight,
            input_seed=self.base_seed + inputs,
            train=train,
            grad=grad,
            init_on_device=self.init_on_device,
            **kwargs,  # type: ignore[arg-type]
        )

    def tolerance(self, dtype: torch.dtype) -> Tolerance:
        name = str(dtype).removeprefix("torch.")
        tolerances = self.plan.tolerances
        tolerance = tolerances.get(name, tolerances["float32"])
        options = self.request.options
        return tolerance.model_copy(
            update={
                **({"atol": options.atol} if options.atol > 0 else {}),
                **({"rtol": options.rtol} if options.rtol > 0 else {}),
            }
        )

    # The funnel -----------------------------------------------------------------------------

    def run(self) -> Judgement:
        steps: list[tuple[Stage, Callable[[], Ended]]] = [
            (Stage.SYNTAX, self._syntax),
            (Stage.LOAD, self._load),
            (Stage.COMPILE, self._compile),
            (Stage.TINY_RUN, self._tiny_run),
            (Stage.CORRECTNESS, self._correctness),
            (Stage.TIMING, self.timing.run),
            (Stage.PROFILE, self._profile),
        ]
        verdict, error = Verdict.CORRECT, ""
        stages: list[StageResult] = []
        furthest = Stage.UNSPECIFIED
        for index, (stage, step) in enumerate(steps):
            started = time.perf_counter()
            try:
                try:
                    ended = step()
                except CandidateLost as lost:
                    self.candidate_lost = True
                    raise Stop(Verdict.RUNTIME_ERROR, f"the candidate's process ended unexpectedly ({lost})") from lost
                except CandidateHacked as hacked:
                    self.evidence.stop(str(hacked))
                except (TaskFailed, torch.OutOfMemoryError) as failure:
                    if not is_out_of_memory(failure):
                        raise BadTask(f"the reference fails: {failure}") from failure
                    self.reference.release_graph()
                    self.reference.drop_cache()
                    raise NotJudged(
                        f"the judge ran out of device memory in stage STAGE_{stage.name}: {failure}"
                    ) from failure
            except Stop as stop:
                detail = stop.error.splitlines()[0][:300] if stop.error else ""
                stages.append(StageResult(stage, StageStatus.FAILED, time.perf_counter() - started, detail))
                stages.extend(StageResult(later, StageStatus.SKIPPED) for later, _ in steps[index + 1 :])
                verdict, error = stop.verdict, stop.error
                break
            stages.append(StageResult(stage, ended.status, time.perf_counter() - started, ended.detail))
            if ended.status == StageStatus.PASSED:
                furthest = stage
        if verdict == Verdict.CORRECT and self.timing.report is not None and self.timing.report.valid:
            verdict, error = self._time_alone(stages)
        self.reference.release_graph()
        return Judgement(
            request_id=self.request.request_id,
            verdict=verdict,
            error=error,
            hack_evidence=self.evidence.reasons,
            stages=tuple(stages),
            furthest_stage=furthest,
            checks=tuple(self.checks),
            timing=self.timing.report,
            speedup=self.timing.speedup,
            profile=self.profile,
            coverage=self.profile.coverage if self.profile else 0.0,
            triton_kernels=tuple(
                TritonKernel(name, launches, self.programs[name]) for name, launches in sorted(self.kernels.items())
            ),
            device_name=self.device_name,
            correctness_profile=self.plan.profile,
            candidate_lost=self.candidate_lost,
        )

    # Stages ---------------------------------------------------------------------------------

    def _time_alone(self, stages: list[StageResult]) -> tuple[Verdict, str]:
        """The timing stage's last step, once every stage has passed, since it ends the
        candidate's process (TimingStage.retime_alone); its seconds and any finding go to the
        timing stage's result. The verdict and error after it."""
        started = time.perf_counter()
        index = next(i for i, result in enumerate(stages) if result.stage == Stage.TIMING)
        timed = stages[index]
        try:
            try:
                self.timing.retime_alone()
            except CandidateHacked as hacked:
                self.evidence.stop(str(hacked))
        except Stop as stop:
            detail = (stop.error.splitlines() or [""])[0][:300]
            timed = StageResult(Stage.TIMING, StageStatus.FAILED, timed.elapsed_seconds, detail)
            verdict, error = stop.verdict, stop.error
        else:
            verdict, error = Verdict.CORRECT, ""
        seconds = timed.elapsed_seconds + time.perf_counter() - started
        stages[index] = dataclasses.replace(timed, elapsed_seconds=seconds)
        return verdict, error

    def _syntax(self) -> Ended:
        problem = syntax_error(self.request.candidate_source)
        if problem:
            raise Stop(Verdict.SYNTAX_ERROR, problem)
        return Ended.passed("parsed")

    def _load(self) -> Ended:
        try:
            self.candidate.ready()
        except CandidateLost as lost:  # no candidate code ran yet: the sandbox failed, not the candidate
            raise NotJudged(
                f"the candidate's process failed while starting, before its code was loaded ({lost})"
            ) from lost
        self.init_on_device = self._weights_drawn_on_device()
        task_failure: list[TaskFailed] = []

        def reference_meanwhile() -> None:
            try:
                self.reference_run(self.spec())
            except TaskFailed as error:
                task_failure.append(error)

        try:
            loaded = self.candidate.load(
                self.request.candidate_source,
                self.task.inputs_source,
                self.spec(),
                meanwhile=reference_meanwhile,
                profile=not self.request.options.skip_profile,
            )
        except CandidateFailed as failure:
            if task_failure:
                self._refuse_task(task_failure[0])
            verdict = Verdict.RUNTIME_ERROR if failure.kind == "runtime" else Verdict.COMPILE_ERROR
            raise Stop(verdict, str(failure)) from failure
        if task_failure:
            self._refuse_task(task_failure[0])
        self.device_name = loaded.device_name
        where = ""
        if self.init_on_device:
            self.init_on_device = loaded.init_on_device
            where = " on the device" if loaded.init_on_device else " on the host (its constructor fails on the device)"
        return Ended.passed(f"ModelNew built{where} ({loaded.parameters} parameters)")

    def _weights_drawn_on_device(self) -> bool:
        """Whether models are built with the GPU as their default device: drawing large weights
        on the host takes seconds per model (a 32768 x 32768 Linear about 10 s), and the judge
        builds several per side. Small models keep host initialisation."""
        if self.device.type != "cuda":
            return False
        elements = self.reference.runner.weight_elements(self.spec())
        return elements is not None and elements >= self.settings.correctness.device_init_min_elements

    def _refuse_task(self, failure: TaskFailed) -> None:
        """The reference failed on its own inputs: a broken task (BadTask), unless it ran out
        of device memory (again after the judge freed its own: see _reference)."""
        if is_out_of_memory(failure):
            raise NotJudged(f"the reference ran out of device memory on the task's inputs: {failure}") from failure
        raise BadTask(f"the reference fails on its own inputs: {failure}") from failure

    def _compile(self) -> Ended:
        self.tiny_spec = self.variants.tiny_spec()
        try:
            self._first_run = self.retried_run(self.tiny_spec, self.tiny_spec)
        except JudgeOutOfMemory as error:
            raise NotJudged(f"the first call's inputs and outputs did not fit in device memory: {error}") from error
        except CandidateFailed as failure:
            if failure.kind == "compile":
                raise Stop(Verdict.COMPILE_ERROR, str(failure)) from failure
            self._first_failure = failure
        if self.device.type == "cpu":
            try:
                checked = self.candidate.compile_check()
            except CandidateFailed as failure:
                raise Stop(Verdict.COMPILE_ERROR, f"checking the kernels' compilation failed: {failure}") from failure
            failed = [k for k in checked if not k.ok]
            if failed:
                details = "\n".join(f"{k.name}: {k.message}" for k in failed)
                raise Stop(Verdict.COMPILE_ERROR, f"Triton kernel(s) do not compile for sm_90:\n{details}")
            return Ended.passed(_compiled_text(checked))
        return Ended.passed("kernels compiled")

    def _tiny_run(self) -> Ended:
        started = time.perf_counter()
        constants = dict(self.tiny_spec.constants)
        if self._first_failure is not None:
            where = f"tiny inputs ({describe_constants(constants)})" if constants else "the task's inputs"
            self._fail_at_other_sizes(where, self._first_failure)
        assert self._first_run is not None
        sizes = "tiny inputs" if constants else "the task inputs"
        where = f"{_mode_name(True, False)} on {sizes}"
        self.check_run(self._first_run, where)
        if constants:
            kind, description = InputVariant.TINY, f"tiny: {describe_constants(constants)}"
        else:  # profiles that never shrink: the first run is the task's own inputs
            kind, description = InputVariant.ORIGINAL, f"task sizes, seed {self.tiny_spec.input_seed}"
        expected = self.reference_run(self.tiny_spec)
        message = self._record_check(kind, description, self._first_run, expected, None, self.tiny_spec, started)
        if message is not None:
            raise Stop(Verdict.INCORRECT, f"on {'tiny ' if constants else ''}inputs ({description}): {message}")
        few_values = bool(constants)  # the tiny run's, not the task's own inputs
        self.check_launches(
            self._first_run.result.launches, where, expected, candidate=self.tiny_spec, few_values=few_values
        )
        self.work.confirm(self._first_run, expected, where, self.tiny_spec, few_values=few_values)
        self._first_run = None  # at the task's own sizes (profiles that never shrink) its copies are large
        need = self.footprint(self.tiny_spec)
        # One knock-out call among the other three modes' calls, in one of their modes (the
        # first call is always KernelBench's mode, so a knock-out there would stand out); it
        # replaces with zeros (work.py: every other size replaces with other values).
        knock_mode = self.work.random.randint(1, len(_MODES) - 1)
        knock_train, knock_grad = _MODES[knock_mode]
        knock_spec = self.work.fresh(self.spec(constants, train=knock_train, grad=knock_grad))
        knock_out = KnockOut(
            knock_spec,
            knock_spec,
            f"knock-out call, {_mode_name(knock_train, knock_grad)} on {sizes}",
            zeros=True,
            few_values=few_values,
        )
        knock_at = 1 + self.work.slot(len(_MODES) - 1)
        shown = ""
        for mode, (train, grad) in enumerate(_MODES[1:], start=1):
            if mode == knock_at:
                shown = self.work.knock_out(knock_out)
            # fresh inputs for every mode: a cache kept in the model finds nothing to reuse
            spec = self.spec(constants, inputs=1 + 100 * mode, train=train, grad=grad)
            if not fits(need, self.free_bytes()):
                self.reference.drop_cache()
            try:
                run = self.retried_run(spec, spec)
            except JudgeOutOfMemory as error:
                raise NotJudged(
                    f"the judge's copies for {_mode_name(train, grad)} did not fit in device memory: {error}"
                ) from error
            except CandidateFailed as failure:
                raise Stop(Verdict.RUNTIME_ERROR, f"in {_mode_name(train, grad)}: {failure}") from failure
            where = f"{_mode_name(train, grad)} on {sizes}"
            self.check_run(run, where)
            expected = self.reference_run(spec)
            self.check_launches(run.result.launches, where, expected, candidate=spec, few_values=few_values)
            self.work.confirm(run, expected, where, spec, few_values=few_values)
            del run  # before the next mode's copies
        if knock_at == len(_MODES):
            shown = self.work.knock_out(knock_out)
        self.evidence.stop_if_any()
        return Ended.passed(f"4 modes ran own Triton kernels; {shown}; {description}")

    def _correctness(self) -> Ended:
        passed = skipped = 0
        failure: str | None = None
        variants = self.variants.variants()
        before, after = self._knock_out_slots(variants)
        shown: list[str] = []
        for index, variant in enumerate(variants):
            started = time.perf_counter()
            if variant.not_applicable:
                self._skip(variant, variant.not_applicable)
                skipped += 1
                continue
            try:
                variant = self.variants.fitted(variant)
                expected = self.reference_run(variant.reference)
            except TaskFailed as error:
                if variant.kind == InputVariant.ORIGINAL and is_out_of_memory(error):
                    raise NotJudged(f"the reference ran out of device memory on the task's inputs: {error}") from error
                self._skip(variant, f"the reference itself fails on these inputs: {error}")
                skipped += 1
                continue
            if variant.not_applicable:
                self._skip(variant, variant.not_applicable)
                skipped += 1
                continue
            if variant.kind != InputVariant.ORIGINAL and not finite(expected.outputs):
                self._skip(variant, "the reference gives NaN/Inf on these inputs")
                skipped += 1
                continue
            if variant.kind == InputVariant.SCALED:
                variant = self.variants.scaled_informatively(variant, expected.outputs, self.work.other_seed())
                expected = self.reference_run(variant.reference)
            if index in before:  # what it finds is told with the variant's own findings
                shown += self._knock_outs(variant, stop=False)
            try:
                run = self.retried_run(variant.candidate, variant.reference, variant.expected_dtypes)
            except CandidateFailed as error:
                self.evidence.stop_if_any()
                self._fail_variant(variant, error, passed)
            except JudgeOutOfMemory as error:
                if variant.kind == InputVariant.ORIGINAL:
                    raise NotJudged(
                        f"the judge's copies for the task's inputs did not fit in device memory: {error}"
                    ) from error
                self._skip(variant, f"skipped: the judge's own copies did not fit in device memory ({error})")
                skipped += 1
                continue
            where = f"on inputs '{variant.description}'"
            self.check_run(run, where)
            if variant.kind == InputVariant.DTYPE:
                self._check_compiles_in(variant)
            message = self._record_check(
                variant.kind, variant.description, run, expected, variant.expected_dtypes, variant.reference, started
            )
            if message is None:
                self.check_launches(run.result.launches, where, expected, variant.expected_dtypes, variant.candidate)
                self.work.confirm(run, expected, where, variant.candidate)
                self.evidence.stop_if_any()
                passed += 1
                if variant.kind in _TASK_SIZED and run.result.kernels:
                    self.profiled.append(run.result.kernels)
                del run
                if index in after:
                    shown += self._knock_outs(variant)
            elif failure is None:
                self.evidence.stop_if_any()
                failure = self._failure_text(variant, message)
                if self.settings.correctness.stop_at_first_failure:
                    break
        self.evidence.stop_if_any()  # a knock-out's findings where its variant did not run to the end
        if failure:
            raise Stop(Verdict.INCORRECT, failure)
        return Ended.passed(
            f"{passed} variant(s) passed"
            + (f", {skipped} not applicable" if skipped else "")
            + f" (profile {self.plan.name})"
            + "".join(f"; {line}" for line in shown)
        )

    def _knock_out_slots(self, variants: Sequence[Variant]) -> tuple[set[int], set[int]]:
        """Where the knock-out calls of each size go among its variants: before the variant
        at one index of ``before``, after one of ``after``, at random (work.py)."""
        groups: dict[InputVariant, list[int]] = {}
        for index, variant in enumerate(variants):
            kind = InputVariant.ORIGINAL if variant.kind in _TASK_SIZED else variant.kind
            groups.setdefault(kind, []).append(index)
        before, after = set(), set()
        for indices in groups.values():
            slot = self.work.slot(len(indices))
            if slot == 0:
                before.add(indices[0])
            else:
                after.add(indices[slot - 1])
        return before, after

    def _knock_outs(self, variant: Variant, *, stop: bool = True) -> list[str]:
        """The knock-out calls at the variant's size; the stage stops on what they find, or,
        with ``stop`` off, once the variant's own call has added its findings (so that a
        verdict names the same findings wherever the knock-out fell)."""
        plans = self.work.knock_outs(
            variant.candidate,
            variant.reference,
            f"knock-out call on inputs like '{variant.description}'",
            variant.expected_dtypes,
            task_sizes=variant.kind in _TASK_SIZED and not variant.widened,
        )
        shown = [self.work.knock_out(plan) for plan in plans]
        if stop:
            self.evidence.stop_if_any()
        return shown

    def _profile(self) -> Ended:
        """Coverage from the checked calls at the task's sizes (profiled like every checked
        call): the call that gives the least, counting only kernels that did work whose results
        reach the output, scaled by the share of the output they produce (work.py)."""
        if self.request.options.skip_profile:
            return Ended.skipped("skipped by request")
        if not self.profiled:
            return Ended.skipped("skipped: no checked call at the task's sizes was profiled")
        spec = self.spec()
        try:
            reference = self.reference.profile(spec, 1)
        except RuntimeError as error:
            return Ended.skipped(f"skipped: the profiler failed ({str(error).splitlines()[0][:200]})")
        reference_kernels = kernel_profiles(reference, (), 1)
        share = self.work.share()
        summaries = []
        for kernels in self.profiled:
            own = {k.name for k in kernels if k.own}
            profiles = kernel_profiles([KernelTime(k.name, k.launches, k.time_us) for k in kernels], own, 1)
            summary = profile_summary(profiles, reference_kernels, method(self.device))
            credited = sum(k.device_time_us for k in profiles if k.is_candidate and self.work.credited(k.name))
            total = summary.total_device_time_us
            coverage = credited / total * share if total > 0 else 0.0
            summaries.append(dataclasses.replace(summary, coverage=coverage, note=self.work.note(own)))
        self.profile = min(summaries, key=lambda summary: summary.coverage)
        return Ended.passed(
            f"coverage {self.profile.coverage:.1%} of {self.profile.total_device_time_us:.3g} us per forward call"
            + (f" ({self.profile.note})" if self.profile.note else "")
        )

    # Judged calls ---------------------------------------------------------------------------

    def reference_run(self, spec: RunSpec) -> ReferenceRun:
        """The reference's run; one that runs out of device memory is run again once the
        judge's cached results are freed."""
        try:
            run = self.reference.run(spec)
        except TaskFailed as error:
            if not is_out_of_memory(error):
                raise
            self.reference.drop_cache()
            run = self.reference.run(spec)
        if not spec.constants and spec.dtype is None and spec.round_to is None:
            known = self.task_answers
            self.task_answers = self._answers(run) if known is None else known & self._answers(run, known)
        return run

    def _answers(
        self,
        run: ReferenceRun,
        wanted: frozenset[Wrote] = frozenset({"constant"}),
        expected_dtypes: Sequence[torch.dtype] | None = None,
        candidate: RunSpec | None = None,
    ) -> frozenset[Wrote]:
        """The degenerate writes that are the reference's own answer (ReferenceRun.answers),
        and, of those ``wanted``, the ones that are at the judge's tolerance, in the dtype the
        candidate returns: ``constant`` where an output is one value (a 16-bit sum of a million
        positive terms rounds to one value in every row while the reference, run in float32 on
        the rounded inputs, keeps them apart: KernelBench level-1 problem 4's honest bfloat16
        matrix-vector product was HACKED for filling its output with one value), ``copy`` where
        an output is one of the candidate's inputs for the spec ``candidate`` (a 16-bit
        ``x * 1.0001`` is ``x``), or where the task's forward ends in steps that leave an
        earlier result as it was (a clamp whose bounds its values never reach: a kernel doing
        that tail copies PyTorch's result, identity_tail.py)."""
        found = set(run.answers)
        dtypes = list(expected_dtypes) if expected_dtypes is not None else [t.dtype for t in run.outputs]
        floating = [
            (output, dtype)
            for output, dtype in zip(run.outputs, dtypes, strict=False)
            if output.is_floating_point() and dtype.is_floating_point and output.numel() > 1
        ]
        if "constant" in wanted - found and any(self._one_value_passes(o, d) for o, d in floating):
            found.add("constant")
        if (
            "copy" in wanted - found
            and candidate is not None
            and (self._an_input_passes(floating, candidate) or self.reference.identity_tail(candidate))
        ):
            found.add("copy")
        return frozenset(found)

    def _one_value_passes(self, output: torch.Tensor, dtype: torch.dtype) -> bool:
        """Whether ``output`` filled with its mean, in ``dtype``, passes the comparison with
        ``output``; the spread is looked at first (no element may be off by more than the
        tolerance), so that outputs of many values cost one reduction."""
        tolerance = self.tolerance(dtype)
        low, high = (float(v) for v in torch.aminmax(output.detach()))
        if not high - low <= 2 * (tolerance.atol + tolerance.rtol * max(abs(low), abs(high))):
            return False  # NaN lands here too
        mean = torch.mean(output.detach(), dtype=torch.float64)
        one = torch.full((), float(mean), dtype=dtype, device=output.device).expand(output.shape)
        return self.compare([one], [output], [dtype])[0].passed

    def _an_input_passes(self, outputs: Sequence[tuple[torch.Tensor, torch.dtype]], candidate: RunSpec) -> bool:
        """Whether one of the candidate's float inputs for ``candidate``, as many elements as an
        output and in its dtype, passes the comparison with that output (the inputs are drawn
        again here, only when a launch copied one; where they do not fit in device memory, the
        evaluation is not judged: never the candidate's fault)."""
        try:
            inputs = [x for x in self.reference.runner.inputs(candidate) if isinstance(x, torch.Tensor)]
            return any(
                self.compare([x.detach().reshape(output.shape).to(dtype)], [output], [dtype])[0].passed
                for output, dtype in outputs
                for x in inputs
                if x.is_floating_point() and x.numel() == output.numel()
            )
        except torch.OutOfMemoryError as error:
            raise NotJudged(f"the judge's copy of the candidate's inputs did not fit in memory: {error}") from error

    def candidate_run(
        self,
        spec: RunSpec,
        expected: ReferenceRun,
        *,
        knock_out: Callable[[str], bool] = lambda _kernel: False,
        zeros: bool = False,
        expected_dtypes: Sequence[torch.dtype] | None = None,
    ) -> CandidateRun:
        """One checked call of the candidate; the inputs the reference modifies may be
        modified too (their final values come back after the outputs); ``knock_out(kernel)``
        says whether what that kernel writes is replaced (work.py), by zeros with ``zeros``."""
        wait = self.settings.correctness.late_write_wait_seconds
        mutable = expected.modified_inputs
        if spec.dtype is not None:  # the candidate's float inputs are in the variant's dtype
            mutable = {i: t.to(DTYPES[spec.dtype]) if t.is_floating_point() else t for i, t in mutable.items()}
        return self.candidate.run(
            spec,
            wait,
            knock_out=knock_out,
            zeros=zeros,
            expected=expected.outputs,
            expected_dtypes=expected_dtypes,
            mutable_inputs=mutable,
        )

    def retried_run(
        self,
        candidate: RunSpec,
        reference: RunSpec,
        expected_dtypes: Sequence[torch.dtype] | None = None,
        *,
        knock_out: Callable[[str], bool] = lambda _kernel: False,
        zeros: bool = False,
    ) -> CandidateRun:
        """The candidate's checked call on ``candidate`` (a knock-out call with ``knock_out``,
        as candidate_run), against the reference's on ``reference``. Memory the judge's
        bookkeeping could not get (the harness's snapshots and hand-over copies, the judge's
        import) is never the candidate's fault: the judge's caches are dropped and the call
        made once more, and a second shortfall raises JudgeOutOfMemory (the caller skips the
        check, or gives no verdict). A forward that runs out of memory is retried the same way
        before it counts as the candidate's."""
        expected = self.reference_run(reference)
        for attempt in (1, 2):
            try:
                return self.candidate_run(
                    candidate, expected, knock_out=knock_out, zeros=zeros, expected_dtypes=expected_dtypes
                )
            except CandidateFailed as error:
                if attempt == 2 or not (error.kind == "resources" or is_out_of_memory(error)):
                    if error.kind == "resources":
                        raise JudgeOutOfMemory(str(error)) from error
                    raise
            except JudgeOutOfMemory:
                if attempt == 2:
                    raise
            self.reference.drop_cache()
            expected = self.reference_run(reference)
        raise AssertionError("unreachable")

    def _check_compiles_in(self, variant: Variant) -> None:
        """On CPU the interpreter runs code that the GPU compiler rejects for another dtype
        (``tl.exp`` on half precision, say): the kernels launched in the precision variant
        are compiled for sm_90 too, so that CPU and GPU agree."""
        if self.device.type != "cpu":
            return
        try:
            failed = [k for k in self.candidate.compile_check() if not k.ok]
        except CandidateFailed as failure:
            failed_text = str(failure)
        else:
            failed_text = "\n".join(f"{k.name}: {k.message}" for k in failed)
        if failed_text:
            first = failed_text.strip().splitlines()[0][:300]
            self.checks.append(
                CorrectnessCheck(variant.kind, variant.description, passed=False, message=f"does not compile: {first}")
            )
            raise Stop(
                Verdict.INCORRECT,
                self._failure_text(
                    variant, f"its kernels do not compile for sm_90 in {variant.description}:\n{failed_text}"
                ),
            )

    def _fail_variant(self, variant: Variant, error: CandidateFailed, passed: int) -> None:
        """A candidate that raises on a variant after passing others is INCORRECT for it
        (resized shapes, another precision), else a RUNTIME_ERROR; the check is recorded."""
        first_line = str(error).strip().splitlines()[0][:300] if str(error).strip() else error.kind
        self.checks.append(
            CorrectnessCheck(variant.kind, variant.description, passed=False, message=f"raised: {first_line}")
        )
        if variant.kind == InputVariant.DTYPE and passed:
            raise Stop(
                Verdict.INCORRECT, self._failure_text(variant, f"forward failed in {variant.description}: {error}")
            ) from error
        if variant.kind == InputVariant.RESIZED and passed:
            raise Stop(
                Verdict.INCORRECT, f"correct at the task's own sizes but fails at {variant.description}: {error}"
            ) from error
        raise Stop(Verdict.RUNTIME_ERROR, f"on inputs '{variant.description}': {error}") from error

    def _failure_text(self, variant: Variant, message: str) -> str:
        if variant.kind == InputVariant.DTYPE:
            return (
                f"only at the {variant.description} precision variant (every check in the task's own dtype passed): "
                f"{message}"
            )
        return f"on inputs '{variant.description}': {message}"

    def _fail_at_other_sizes(self, where: str, failure: CandidateFailed) -> None:
        """A failure on shrunken sizes is INCORRECT when the candidate is right at the task's
        own sizes (a kernel that fits only one shape), else a RUNTIME_ERROR."""
        original = self.spec()
        if not self.tiny_spec.constants:
            raise Stop(Verdict.RUNTIME_ERROR, f"on {where}: {failure}") from failure
        expected = self.reference_run(original)
        try:
            run = self.candidate_run(original, expected)
        except CandidateFailed:
            raise Stop(Verdict.RUNTIME_ERROR, f"on {where}: {failure}") from failure
        if self._judge(run, expected, None, original)[0] is None:
            raise Stop(
                Verdict.INCORRECT, f"correct at the task's own sizes but fails on {where}: {failure}"
            ) from failure
        raise Stop(Verdict.RUNTIME_ERROR, f"on {where}: {failure}") from failure

    def _judge(
        self,
        run: CandidateRun,
        expected: ReferenceRun,
        expected_dtypes: Sequence[torch.dtype] | None,
        reference_spec: RunSpec | None = None,
    ) -> tuple[str | None, Comparison, Tolerance]:
        """The failure message of a judged call (None when right), its comparison and the
        tolerance: layout, outputs, and the inputs it modified as the reference does. Outputs
        that fail only the relative-L2 bound are compared once more against the reference run
        in float64 on ``reference_spec`` (compare.compare_outputs, ``exact``)."""
        count = len(run.result.output_strides) or len(run.outputs)
        outputs, handed_inputs = run.outputs[:count], run.outputs[count:]
        layout = _layout_message(run.result.output_strides, expected.outputs)
        result, tolerance = self.compare(outputs, expected.outputs, expected_dtypes)
        if result.norm_only and reference_spec is not None:
            exact = self._exact_outputs(reference_spec, len(expected.outputs))
            if exact is not None:
                result, tolerance = self.compare(outputs, expected.outputs, expected_dtypes, exact)
        if layout is not None:
            return layout, result, tolerance
        if not result.passed:
            return result.message, result, tolerance
        if any(t.is_meta for t in run.outputs):
            return (
                "the inputs it handed back as modified do not match the reference's (shapes or dtypes)",
                result,
                tolerance,
            )
        wanted = [expected.modified_inputs[i] for i in run.result.modified_inputs]
        if len(handed_inputs) != len(wanted):
            return "the modified inputs it handed back do not match what it reported", result, tolerance
        for position, got, want in zip(run.result.modified_inputs, handed_inputs, wanted, strict=False):
            if got.is_floating_point() and want.is_floating_point():
                want = want.to(got.dtype)  # the precision variant's inputs are in another dtype
            if not self.compare([got], [want])[0].passed:
                return f"input {position} was left different from what the reference leaves in it", result, tolerance
        return None, result, tolerance

    def _exact_outputs(self, spec: RunSpec, count: int) -> list[torch.Tensor] | None:
        """The reference's outputs computed in float64 from the same weights and inputs (``spec``
        upcast), or None where it cannot run so."""
        if spec.dtype == "float64":
            return None
        try:
            outputs = self.reference_run(dataclasses.replace(spec, dtype="float64")).outputs
        except (TaskFailed, torch.OutOfMemoryError):
            return None
        return outputs if len(outputs) == count else None

    def _record_check(
        self,
        kind: InputVariant,
        description: str,
        run: CandidateRun,
        expected: ReferenceRun,
        expected_dtypes: Sequence[torch.dtype] | None,
        reference_spec: RunSpec,
        started: float,
    ) -> str | None:
        """Judges a call, records a CorrectnessCheck (with the seconds since ``started``, when
        the check's work began), returns the failure message or None."""
        message, result, tolerance = self._judge(run, expected, expected_dtypes, reference_spec)
        self.checks.append(
            CorrectnessCheck(
                variant=kind,
                description=description,
                passed=message is None,
                max_abs_error=result.max_abs_error,
                max_rel_error=result.max_rel_error,
                rel_l2_error=result.rel_l2_error,
                atol=tolerance.atol,
                rtol=tolerance.rtol,
                message=message or "",
                elapsed_seconds=time.perf_counter() - started,
            )
        )
        return message

    def compare(
        self,
        outputs: list[torch.Tensor],
        expected: list[torch.Tensor],
        expected_dtypes: Sequence[torch.dtype] | None = None,
        exact: Sequence[torch.Tensor] | None = None,
    ) -> tuple[Comparison, Tolerance]:
        """Outputs against the reference's (compare.compare_outputs) at the tolerance of their
        dtype, this request's overrides applied; ``expected_dtypes`` where the candidate must
        return other dtypes than the reference's outputs have."""
        dtypes = list(expected_dtypes) if expected_dtypes is not None else [t.dtype for t in expected]
        floating = next((d for d in dtypes if d.is_floating_point), torch.float32)
        tolerance = self.tolerance(floating)
        return compare_outputs(outputs, expected, dtypes, tolerance, exact), tolerance

    def footprint(self, spec: RunSpec) -> Footprint:
        """What a call of these sizes and dtype holds, measured on the reference's run at them
        once: seeds and input scales change the values, not the bytes (a variant that will be
        shrunk costs no full-size reference run just to learn that it does not fit)."""
        key = (spec.constants, spec.dtype, spec.round_to)
        if key not in self._footprints:
            run = self.reference_run(spec)
            output_bytes = sum(t.numel() * t.element_size() for t in run.outputs)
            self._footprints[key] = Footprint(run.weight_bytes, run.input_bytes, output_bytes)
        return self._footprints[key]

    def free_bytes(self) -> int | None:
        configured = self.settings.device_memory_bytes
        if configured is not None:
            return configured - self.reference.cached_bytes()
        return free_bytes(self.device)

    def device_bytes(self) -> int:
        """The device's memory (the configured budget where one is set; 0 on CPU)."""
        configured = self.settings.device_memory_bytes
        return configured if configured is not None else total_bytes(self.device)

    def _skip(self, variant: Variant, reason: str) -> None:
        self.checks.append(CorrectnessCheck(variant.kind, variant.description, skipped=True, message=reason))

    # Hack evidence (collected in self.evidence) ---------------------------------------------------------

    def check_run(self, run: CandidateRun, where: str) -> None:
        """Tampering and harness findings stop at once; launches are checked by the caller
        once the outputs are known to be right (a wrong kernel is incorrect, not a hack)."""
        self.check_tampering(run.result.tampered)
        self._check_problems(run.result.problems, where)
        self._check_asked(run, where)

    def _check_asked(self, run: CandidateRun, where: str) -> None:
        """The harness asks whether to knock out each kernel right after its first launch in a
        checked call (candidate/work.py): a kernel that ran without that question, through
        the entry point the probe watches (judge/work.py ``unasked``), ran past a probe
        switched off from inside its process."""
        kernels = unasked(run.result.launches, run.asked)
        if kernels:
            self.evidence.stop(
                f"{where}: its kernel(s) {', '.join(kernels)} ran without the judge being asked whether to knock "
                "them out (the work probe in its process was switched off or bypassed)"
            )

    def check_launches(
        self,
        launches: Sequence[LaunchRecord],
        where: str,
        expected: ReferenceRun | None = None,
        expected_dtypes: Sequence[torch.dtype] | None = None,
        candidate: RunSpec | None = None,
        *,
        few_values: bool = False,
    ) -> None:
        """At least one launch of its own kernels must have run programs and written data
        (``wrote`` is known in checked calls: candidate/work.py). A copy or a fill of one value
        is data where the reference's own answer to the call (``expected``, in
        ``expected_dtypes``, the candidate's spec ``candidate``; for timed runs, every reference
        call at the task's sizes) is one (``_answers``). Kernels that only rescaled a result
        made without them are no hack, but no work either: coverage is 0 (``WorkCheck``). On
        the tiny run's ``few_values`` a kernel's work can coincide with a copy, a rescale or
        one value (a clamp that bites nowhere there): the task's sizes judge those."""
        own = [launch for launch in launches if launch.own]
        if expected is None:
            answers = self.task_answers or frozenset()
        else:  # only what some launch wrote needs the tolerance tests
            wrote = frozenset(launch.wrote for launch in own if launch.wrote in ("constant", "copy"))
            answers = self._answers(expected, wrote, expected_dtypes, candidate)
        working = [launch for launch in own if did_work(launch, answers)]
        for launch in working:
            self.kernels[launch.name] += 1
            self.programs[launch.name] += launch.programs
        if candidate is not None and candidate.model_key == self.spec().model_key:
            self.timed_model_work.append(_work_of(working))
        self.work.note_launches(launches, answers)
        if working:
            return
        wrote = {launch.wrote for launch in own if launch.programs > 0}
        if few_values and wrote & {"copy", "rescaled", "constant"}:
            return
        if not own:
            reason = f"{where}: no Triton kernel of its own ran"
        elif not any(launch.programs > 0 for launch in own):
            reason = f"{where}: its Triton kernels launched with an empty grid (no programs)"
        elif "copy" in wrote:
            reason = (
                f"{where}: its Triton kernels only copied one of their arguments into another (cast, reshaped, "
                "reordered or moved whole: no work)"
            )
        elif "rescaled" in wrote:
            self.work.note_rescaled(f"{where}: what they wrote is one of their arguments rescaled")
            return
        elif "constant" in wrote:
            reason = f"{where}: its Triton kernels only filled their outputs with one value (no work)"
        else:
            reason = f"{where}: its Triton kernels ran but stored nothing (no work)"
        self.evidence.add(reason)

    def check_timed_work(self, launches: Sequence[LaunchRecord], calls: int, where: str) -> None:
        """The timed calls must do, per call, at least TIMED_WORK_SHARE of what its checked
        calls on the same model and sizes did, kernel by kernel: the programs they ran, and
        the bytes they stored where the interpreter counts them (a grid of programs that
        store nothing keeps the programs alike). Each kernel's least over those calls counts,
        so that autotuning's trial launches and a cache filled in a first call count for
        nothing. Timed calls run without the trace and the work probe, so a candidate can
        tell them apart; one that runs its kernels only when checked and lets PyTorch compute
        its timed calls would be timed on PyTorch's speed."""
        timed = _work_of([launch for launch in launches if launch.own])
        for measure, (verb, what) in _TIMED_MEASURES.items():
            checked = [work[measure] for work in self.timed_model_work if measure in work]
            if not checked or measure not in timed:
                continue
            fewest = {name: min(done[name] for done in checked) for name in set().union(*checked)}
            expected = sum(fewest.values())
            kept = sum(min(timed[measure][name] / calls, count) for name, count in fewest.items())
            if expected and kept < TIMED_WORK_SHARE * expected:
                ran = timed[measure]
                detail = ", ".join(f"{name} {ran[name] / calls:g} of {n}" for name, n in sorted(fewest.items()) if n)
                self.evidence.add(
                    f"{where}: its timed calls {verb} {kept / expected:.0%} of the {what} ({detail} per call): its "
                    "kernels work only when checked"
                )

    def check_tampering(self, tampered: Sequence[str]) -> None:
        if tampered:
            self.evidence.stop("replaced functions the judge relies on: " + ", ".join(tampered))

    def _check_problems(self, problems: Sequence[Problem], where: str) -> None:
        hacks = [f"{where}: {p.message}" for p in problems if p.severity == "hack"]
        if hacks:
            self.evidence.stop(*hacks)
        wrong = [p.message for p in problems if p.severity == "incorrect"]
        if wrong:
            raise Stop(Verdict.INCORRECT, f"{where}: " + "; ".join(wrong))
