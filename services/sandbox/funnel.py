"""The evaluation funnel, run by the judge: stages in order, stopping at the first failure.

syntax -> load (import, build ModelNew) -> compile (first run; on CPU also an ahead-of-time
compile for sm_90) -> tiny run (four modes, own Triton kernels every time, tiny correctness,
a knock-out call that destroys the kernels' results) -> correctness (input variants) ->
timing (interleaved with the reference). Every candidate forward call is checked for
launches of the candidate's own kernels, late writes, mutated inputs, odd outputs and
tampering (services/sandbox/harness.py).
"""

from __future__ import annotations

import math
import secrets
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from drkernel.config import SandboxSettings, Tolerance
from drkernel.v1 import sandbox_pb2 as pb
from services.profiler.collect import KernelTime, method
from services.profiler.summary import kernel_profiles, profile_summary
from services.sandbox.candidate_client import CandidateClient, CandidateFailed, CandidateLost, CandidateRun
from services.sandbox.compare import Comparison, compare_outputs
from services.sandbox.feedback import feedback_text
from services.sandbox.protocol import LaunchRecord, Problem
from services.sandbox.reference import Reference, ReferenceError
from services.sandbox.reward import compute_reward
from services.sandbox.runner import DTYPES, RunSpec
from services.sandbox.task_source import TaskSource, resized_plans, syntax_error, tiny_plans
from services.sandbox.timing import Clock, sample_values, summarize

# Modes of the tiny run; the first is KernelBench's (a freshly built module is in training
# mode; the harness evaluates without autograd) and is the one compared with the reference.
_MODES = ((True, False), (False, False), (True, True), (False, True))


def _mode_name(train: bool, grad: bool) -> str:
    return f"{'train' if train else 'eval'} mode {'with' if grad else 'without'} autograd"


class BadTask(Exception):
    """The task's own code fails on its own inputs: the request is at fault."""


class _Stop(Exception):
    def __init__(self, verdict: int, error: str, hack_reasons: Sequence[str] = ()) -> None:
        super().__init__(error)
        self.verdict, self.error, self.hack_reasons = verdict, error, list(hack_reasons)


@dataclass(frozen=True)
class _Variant:
    kind: int
    description: str
    candidate: RunSpec
    reference: RunSpec
    expected_dtypes: tuple[torch.dtype, ...] | None = None
    not_applicable: str = ""


def _describe_constants(constants: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in constants.items()) or "task sizes"


def _finite(outputs: Sequence[torch.Tensor]) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in outputs if t.is_floating_point())


class Evaluation:
    """One candidate judged against one task; ``run()`` returns the response."""

    def __init__(
        self,
        request: pb.EvaluateRequest,
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
        self.base_seed = options.seed if options.HasField("seed") else settings.seed
        self.response = pb.EvaluateResponse(request_id=request.request_id)
        self.hack_reasons: list[str] = []
        self.kernels: Counter[str] = Counter()
        self.programs: Counter[str] = Counter()
        self._first_run: CandidateRun | None = None
        self._first_failure: CandidateFailed | None = None
        self.candidate_lost = False
        self.tiny_spec = self._spec()

    # Specs ----------------------------------------------------------------------------------

    def _spec(self, constants: dict[str, int] | None = None, *, weight: int = 0, inputs: int = 1,
              train: bool = True, grad: bool = False, **kwargs: object) -> RunSpec:
        return RunSpec(
            constants=tuple(sorted((constants or {}).items())),
            weight_seed=self.base_seed + weight, input_seed=self.base_seed + inputs,
            train=train, grad=grad, **kwargs,  # type: ignore[arg-type]
        )

    def _tolerance(self, dtype: torch.dtype) -> Tolerance:
        name = str(dtype).removeprefix("torch.")
        tolerance = self.settings.correctness.tolerances.get(name, self.settings.correctness.tolerances["float32"])
        options = self.request.options
        return tolerance.model_copy(update={
            **({"atol": options.atol} if options.atol > 0 else {}),
            **({"rtol": options.rtol} if options.rtol > 0 else {}),
        })

    # The funnel -----------------------------------------------------------------------------

    def run(self) -> pb.EvaluateResponse:
        steps: list[tuple[int, Callable[[], str]]] = [
            (pb.STAGE_SYNTAX, self._syntax),
            (pb.STAGE_LOAD, self._load),
            (pb.STAGE_COMPILE, self._compile),
            (pb.STAGE_TINY_RUN, self._tiny_run),
            (pb.STAGE_CORRECTNESS, self._correctness),
            (pb.STAGE_TIMING, self._timing),
            (pb.STAGE_PROFILE, self._profile),
        ]
        verdict, error = pb.VERDICT_CORRECT, ""
        for index, (stage, step) in enumerate(steps):
            started = time.perf_counter()
            record = self.response.stages.add(stage=stage)
            try:
                try:
                    record.detail = step()
                except CandidateLost as lost:
                    self.candidate_lost = True
                    raise _Stop(pb.VERDICT_RUNTIME_ERROR, f"the candidate's process ended unexpectedly ({lost})") from lost
            except _Stop as stop:
                record.status = pb.STAGE_STATUS_FAILED
                record.detail = stop.error.splitlines()[0][:300] if stop.error else ""
                verdict, error = stop.verdict, stop.error
                self.hack_reasons.extend(r for r in stop.hack_reasons if r not in self.hack_reasons)
                for later, _ in steps[index + 1 :]:
                    self.response.stages.add(stage=later, status=pb.STAGE_STATUS_SKIPPED)
                break
            finally:
                record.elapsed_seconds = time.perf_counter() - started
            record.status = pb.STAGE_STATUS_SKIPPED if record.detail.startswith("skipped") else pb.STAGE_STATUS_PASSED
            if record.status == pb.STAGE_STATUS_PASSED:
                self.response.furthest_stage = stage
        return self._finish(verdict, error)

    def _finish(self, verdict: int, error: str) -> pb.EvaluateResponse:
        response = self.response
        response.verdict = verdict
        response.error = error
        response.hack_reasons.extend(self.hack_reasons if verdict == pb.VERDICT_HACKED else [])
        for name, launches in sorted(self.kernels.items()):
            response.triton_kernels.add(name=name, launches=launches, programs=self.programs[name])
        response.reward = compute_reward(response, self.settings.reward)
        response.feedback = feedback_text(response)
        return response

    # Stages ---------------------------------------------------------------------------------

    def _syntax(self) -> str:
        problem = syntax_error(self.request.candidate_source)
        if problem:
            raise _Stop(pb.VERDICT_SYNTAX_ERROR, problem)
        return "parsed"

    def _load(self) -> str:
        self.candidate.ready()
        try:
            self._reference_outputs(self._spec())
        except ReferenceError as error:
            raise BadTask(f"the reference fails on its own inputs: {error}") from error
        try:
            loaded = self.candidate.load(self.request.candidate_source, self.task.inputs_source, self._spec())
        except CandidateFailed as failure:
            verdict = pb.VERDICT_RUNTIME_ERROR if failure.kind == "runtime" else pb.VERDICT_COMPILE_ERROR
            raise _Stop(verdict, str(failure)) from failure
        self.response.device_name = loaded.device_name
        return f"ModelNew built ({loaded.parameters} parameters)"

    def _compile(self) -> str:
        self.tiny_spec = self._choose_tiny_spec()
        try:
            self._first_run = self.candidate.run(self.tiny_spec, self.settings.correctness.late_write_wait_seconds)
        except CandidateFailed as failure:
            if failure.kind == "compile":
                raise _Stop(pb.VERDICT_COMPILE_ERROR, str(failure)) from failure
            self._first_failure = failure
        if self.device.type == "cpu":
            try:
                checked = self.candidate.compile_check()
            except CandidateFailed as failure:
                raise _Stop(pb.VERDICT_COMPILE_ERROR, f"checking the kernels' compilation failed: {failure}") from failure
            failed = [k for k in checked if not k.ok]
            if failed:
                details = "\n".join(f"{k.name}: {k.message}" for k in failed)
                raise _Stop(pb.VERDICT_COMPILE_ERROR, f"Triton kernel(s) do not compile for sm_90:\n{details}")
            return "kernels compiled for sm_90 (CUDA target) without a GPU"
        return "kernels compiled"

    def _tiny_run(self) -> str:
        if self._first_failure is not None:
            self._fail_at_other_sizes(f"tiny inputs ({_describe_constants(dict(self.tiny_spec.constants))})", self._first_failure)
        assert self._first_run is not None
        where = f"{_mode_name(True, False)} on tiny inputs"
        self._check_run(self._first_run, where)
        description = f"tiny: {_describe_constants(dict(self.tiny_spec.constants))}"
        message = self._record_check(pb.INPUT_VARIANT_TINY, description, self._first_run.outputs, self._reference_outputs(self.tiny_spec), None)
        if message is not None:
            raise _Stop(pb.VERDICT_INCORRECT, f"on tiny inputs ({description}): {message}")
        self._check_launches(self._first_run.result.launches, where)
        for mode, (train, grad) in enumerate(_MODES[1:], start=1):
            # fresh inputs for every mode: a cache kept in the model finds nothing to reuse
            spec = self._spec(dict(self.tiny_spec.constants), inputs=1 + 100 * mode, train=train, grad=grad)
            try:
                run = self.candidate.run(spec, self.settings.correctness.late_write_wait_seconds)
            except CandidateFailed as failure:
                raise _Stop(pb.VERDICT_RUNTIME_ERROR, f"in {_mode_name(train, grad)}: {failure}") from failure
            self._check_run(run, f"{_mode_name(train, grad)} on tiny inputs")
            self._check_launches(run.result.launches, f"{_mode_name(train, grad)} on tiny inputs")
        self._stop_if_hacked()
        knocked_out = self._check_kernels_matter()
        self._stop_if_hacked()
        return f"4 modes ran own Triton kernels; {knocked_out}; {description}"

    def _correctness(self) -> str:
        passed = skipped = 0
        failure: str | None = None
        for variant in self._variants():
            if variant.not_applicable:
                self._skip(variant, variant.not_applicable)
                skipped += 1
                continue
            try:
                expected = self._reference_outputs(variant.reference)
            except ReferenceError as error:
                self._skip(variant, f"the reference itself fails on these inputs: {error}")
                skipped += 1
                continue
            if variant.kind != pb.INPUT_VARIANT_ORIGINAL and not _finite(expected):
                self._skip(variant, "the reference gives NaN/Inf on these inputs")
                skipped += 1
                continue
            try:
                run = self.candidate.run(variant.candidate, self.settings.correctness.late_write_wait_seconds)
            except CandidateFailed as error:
                if variant.kind == pb.INPUT_VARIANT_RESIZED and passed:
                    raise _Stop(pb.VERDICT_INCORRECT, f"correct at the task's own sizes but fails at {variant.description}: {error}") from error
                raise _Stop(pb.VERDICT_RUNTIME_ERROR, f"on inputs '{variant.description}': {error}") from error
            self._check_run(run, f"on inputs '{variant.description}'")
            message = self._record_check(variant.kind, variant.description, run.outputs, expected, variant.expected_dtypes)
            if message is None:
                self._check_launches(run.result.launches, f"on inputs '{variant.description}'")
                self._stop_if_hacked()
                passed += 1
            elif failure is None:
                failure = f"on inputs '{variant.description}': {message}"
                if self.settings.correctness.stop_at_first_failure:
                    break
        if failure:
            raise _Stop(pb.VERDICT_INCORRECT, failure)
        return f"{passed} variant(s) passed" + (f", {skipped} not applicable" if skipped else "")

    def _timing(self) -> str:
        report = self.response.timing
        if self.request.options.skip_timing:
            report.invalid_reason = "timing skipped by request"
            return "skipped by request"
        timing = self.settings.timing
        cuda = self.device.type == "cuda"
        trials = (self.request.options.timing_trials or timing.trials) if cuda else timing.cpu_trials
        warmups = (self.request.options.warmup_trials or timing.warmup_trials) if cuda else 0
        speedup = self._timing_round(trials, warmups, first_input=1000)
        if cuda and speedup > timing.recheck_speedup_above:
            first = pb.TimingReport()
            first.CopyFrom(report)
            again = self._timing_round(trials, warmups, first_input=5000)
            if again > speedup:
                report.CopyFrom(first)
            speedup = min(speedup, again)
        if not cuda:
            report.invalid_reason = "CPU interpreter timing is not comparable to GPU execution"
            return f"{trials} interpreter trial(s), not valid for speedup"
        report.valid = True
        report.method = (
            f"CUDA events closed by device-wide synchronisation; {timing.l2_flush_bytes >> 20} MiB L2 flush, "
            "persisting L2 reset, fresh inputs per trial; reference and candidate interleaved on one GPU"
        )
        self.response.speedup = speedup
        return f"speedup {speedup:.3f}x over {trials} interleaved trials"

    def _profile(self) -> str:
        if self.request.options.skip_profile:
            return "skipped by request"
        spec = self._spec()
        calls = self.settings.profile_calls_cuda if self.device.type == "cuda" else 1
        try:
            profiled = self.candidate.profile(spec, calls)
            reference = self.reference.profile(spec, calls)
        except (CandidateFailed, RuntimeError) as error:
            return f"skipped: the profiler failed ({str(error).splitlines()[0][:200]})"
        own = {k.name for k in profiled if k.own}
        candidate_kernels = kernel_profiles([KernelTime(k.name, k.launches, k.time_us) for k in profiled], own, calls)
        summary = profile_summary(candidate_kernels, kernel_profiles(reference, (), calls), method(self.device))
        self.response.profile.CopyFrom(summary)
        self.response.coverage = summary.coverage
        return f"coverage {summary.coverage:.1%} of {summary.total_device_time_us:.3g} us per forward call"

    # Helpers --------------------------------------------------------------------------------

    def _timing_round(self, trials: int, warmups: int, first_input: int) -> float:
        timing = self.settings.timing
        ref_us: list[float] = []
        cand_us: list[float] = []
        ref_gap: list[float] = []
        cand_gap: list[float] = []
        calls = 1
        fastest = math.inf
        trial = 0
        while trial < warmups + trials:
            spec = self._spec(inputs=first_input + trial)
            order = (True, False) if trial % 2 == 0 else (False, True)
            for is_reference in order:
                if is_reference:
                    timed = self.reference.time_trial(spec, self.clock, calls)
                    ref_stream, ref_device = timed.stream_us, timed.device_us
                else:
                    try:
                        result = self.candidate.time_trial(spec, calls)
                    except CandidateFailed as error:
                        raise _Stop(pb.VERDICT_RUNTIME_ERROR, f"during timing: {error}") from error
                    self._check_tampering(result.tampered)
                    self._check_launches(result.launches, f"timed run {trial}")
                    cand_stream, cand_device = result.stream_us, result.device_us
            self._check_timed_results(trial, timed.outputs)
            self._stop_if_hacked()
            if trial < warmups and trial >= 2 and min(ref_stream, cand_stream) * calls > timing.long_call_us:
                warmups = trial + 1  # long calls: three warm-ups are plenty, the rest would only cost
            if trial >= warmups:
                ref_us.append(ref_stream)
                cand_us.append(cand_stream)
                ref_gap.append(ref_device - ref_stream)
                cand_gap.append(cand_device - cand_stream)
            elif self.device.type == "cuda":
                # Calls per trial are chosen halfway through the warm-ups from the fastest
                # single calls seen, once first-call costs are gone, and then kept.
                fastest = min(fastest, ref_stream, cand_stream)
                if trial == (warmups - 1) // 2:
                    calls = max(1, min(timing.max_calls_per_trial, math.ceil(timing.min_trial_us / max(fastest, 1.0))))
            trial += 1
        self.response.timing.calls_per_trial = calls
        self.response.timing.warmup_trials = warmups
        hidden_us = statistics.median(cand_gap) - statistics.median(ref_gap)
        if self.device.type == "cuda" and hidden_us > self.settings.timing.side_stream_slack_us:
            reason = (
                f"the device stayed busy {hidden_us:.1f} us longer after forward returned than for the reference "
                "(work hidden on another stream, outside the timed region)"
            )
            raise _Stop(pb.VERDICT_HACKED, reason, [reason])
        report = self.response.timing
        report.reference.CopyFrom(summarize(ref_us, self.settings.timing.trim_fraction))
        report.candidate.CopyFrom(summarize(cand_us, self.settings.timing.trim_fraction))
        return report.reference.median_us / report.candidate.median_us if report.candidate.median_us > 0 else 0.0

    def _fail_at_other_sizes(self, where: str, failure: CandidateFailed) -> None:
        """A failure on shrunken sizes is INCORRECT when the candidate is right at the task's
        own sizes (a kernel that fits only one shape), else a RUNTIME_ERROR."""
        original = self._spec()
        try:
            run = self.candidate.run(original, self.settings.correctness.late_write_wait_seconds)
        except CandidateFailed:
            raise _Stop(pb.VERDICT_RUNTIME_ERROR, f"on {where}: {failure}") from failure
        expected = self._reference_outputs(original)
        if compare_outputs(run.outputs, expected, [t.dtype for t in expected], self._tolerance(expected[0].dtype)).passed:
            raise _Stop(pb.VERDICT_INCORRECT, f"correct at the task's own sizes but fails on {where}: {failure}") from failure
        raise _Stop(pb.VERDICT_RUNTIME_ERROR, f"on {where}: {failure}") from failure

    def _check_timed_results(self, trial: int, reference_calls: list[list[torch.Tensor]]) -> None:
        """Spot-checks what every timed call returned, at positions drawn only now."""
        seed = secrets.randbits(62)
        got = self.candidate.sample(seed)
        want = [value for outputs in reference_calls for value in sample_values(outputs, seed)]
        dtypes = [t.dtype for t in want]
        floating = next((d for d in dtypes if d.is_floating_point), torch.float32)
        if not compare_outputs(got, want, dtypes, self._tolerance(floating)).passed:
            self.hack_reasons.append(
                f"timed run {trial} returned a different result than the reference on the same fresh "
                "inputs (outputs cached, stale or computed differently while timed)"
            )

    def _reference_outputs(self, spec: RunSpec) -> list[torch.Tensor]:
        return self.reference.outputs(spec)

    def _choose_tiny_spec(self) -> RunSpec:
        sizes = self.task.sizes(self.settings.correctness.size_constant_min)
        for plan in tiny_plans(sizes, self.settings.correctness.tiny_size):
            spec = self._spec(plan)
            try:
                if _finite(self._reference_outputs(spec)):
                    return spec
            except ReferenceError:
                continue
        return self._spec()

    def _variants(self) -> list[_Variant]:
        correctness = self.settings.correctness
        variants: list[_Variant] = []
        for name in correctness.variants:
            if name == "original":
                spec = self._spec()
                variants.append(_Variant(pb.INPUT_VARIANT_ORIGINAL, f"task sizes, seed {spec.input_seed}", spec, spec))
            elif name == "seed":
                spec = self._spec(weight=10, inputs=11)
                variants.append(_Variant(pb.INPUT_VARIANT_SEED, f"weights seed {spec.weight_seed}, inputs seed {spec.input_seed}", spec, spec))
            elif name == "scaled":
                spec = self._spec(inputs=21, scale=correctness.scale)
                variants.append(_Variant(pb.INPUT_VARIANT_SCALED, f"float inputs x{correctness.scale:g}", spec, spec))
            elif name == "resized":
                variants.append(self._resized_variant())
            elif name == "dtype":
                variants.append(self._dtype_variant())
        return variants

    def _resized_variant(self) -> _Variant:
        sizes = self.task.sizes(self.settings.correctness.size_constant_min)
        plans = resized_plans(sizes)
        for plan in plans:
            spec = self._spec(plan, inputs=31)
            try:
                outputs = self._reference_outputs(spec)
            except ReferenceError:
                continue
            if _finite(outputs):
                return _Variant(pb.INPUT_VARIANT_RESIZED, _describe_constants(plan), spec, spec)
        reason = "no size constants to change" if not sizes else "the reference fails at every other size tried"
        spec = self._spec(inputs=31)
        return _Variant(pb.INPUT_VARIANT_RESIZED, "other sizes", spec, spec, not_applicable=reason)

    def _dtype_variant(self) -> _Variant:
        correctness = self.settings.correctness
        other = correctness.dtype_cuda if self.device.type == "cuda" else correctness.dtype_cpu
        original = self._reference_outputs(self._spec())
        if all(t.dtype == DTYPES[other] for t in original if t.is_floating_point()):
            other = "float32"
        candidate = self._spec(inputs=41, dtype=other)
        reference = self._spec(inputs=41, round_to=other)
        try:
            probe = self._reference_outputs(candidate)
        except ReferenceError:
            return _Variant(pb.INPUT_VARIANT_DTYPE, other, reference, reference, not_applicable=f"the reference does not run in {other}")
        return _Variant(pb.INPUT_VARIANT_DTYPE, other, candidate, reference, tuple(t.dtype for t in probe))

    def _skip(self, variant: _Variant, reason: str) -> None:
        self.response.checks.add(variant=variant.kind, description=variant.description, skipped=True, message=reason)

    def _record_check(
        self, kind: int, description: str, outputs: list[torch.Tensor], expected: list[torch.Tensor],
        expected_dtypes: Sequence[torch.dtype] | None,
    ) -> str | None:
        """Compares, records a CorrectnessCheck, returns the failure message or None."""
        result, tolerance = self._compare(outputs, expected, expected_dtypes)
        self.response.checks.add(
            variant=kind, description=description, passed=result.passed,
            max_abs_error=result.max_abs_error, max_rel_error=result.max_rel_error,
            rel_l2_error=result.rel_l2_error, atol=tolerance.atol, rtol=tolerance.rtol, message=result.message,
        )
        return None if result.passed else result.message

    def _compare(
        self, outputs: list[torch.Tensor], expected: list[torch.Tensor], expected_dtypes: Sequence[torch.dtype] | None = None,
    ) -> tuple[Comparison, Tolerance]:
        dtypes = list(expected_dtypes) if expected_dtypes is not None else [t.dtype for t in expected]
        floating = next((d for d in dtypes if d.is_floating_point), torch.float32)
        tolerance = self._tolerance(floating)
        return compare_outputs(outputs, expected, dtypes, tolerance), tolerance

    def _check_kernels_matter(self) -> str:
        """One more tiny call with every result of the candidate's own kernels destroyed
        (knockout.py): outputs that stay right were not computed by those kernels."""
        spec = self._spec(dict(self.tiny_spec.constants), inputs=1 + 100 * len(_MODES))
        try:
            run = self.candidate.run(spec, 0.0, knock_out=True)
        except CandidateFailed:
            return "outputs depend on its kernels (the call fails without their results)"
        self._check_tampering(run.result.tampered)
        if run.result.overwritten == 0:
            return "no kernel results to knock out"
        try:
            expected = self._reference_outputs(spec)
        except ReferenceError:
            return "kernel results not knocked out (the reference fails on these inputs)"
        result, _ = self._compare(run.outputs, expected)
        if not result.passed:
            return "outputs depend on its kernels"
        reason = (
            f"tiny inputs: its outputs stay correct with all {run.result.overwritten} tensor(s) written by its "
            "Triton kernels overwritten (NaN), so those kernels do not compute the output"
        )
        self.hack_reasons.append(reason)
        return reason

    def _check_run(self, run: CandidateRun, where: str) -> None:
        """Tampering and harness findings stop at once; launches are checked by the caller
        once the outputs are known to be right (a wrong kernel is incorrect, not a hack)."""
        self._check_tampering(run.result.tampered)
        self._check_problems(run.result.problems, where)

    def _stop_if_hacked(self) -> None:
        if self.hack_reasons:
            raise _Stop(pb.VERDICT_HACKED, "; ".join(self.hack_reasons), self.hack_reasons)

    def _check_launches(self, launches: Sequence[LaunchRecord], where: str) -> None:
        own = [launch for launch in launches if launch.own]
        working = [launch for launch in own if launch.programs > 0 and launch.stored_bytes != 0]
        for launch in working:
            self.kernels[launch.name] += 1
            self.programs[launch.name] += launch.programs
        if not working:
            if not own:
                reason = f"{where}: no Triton kernel of its own ran"
            elif not any(launch.programs > 0 for launch in own):
                reason = f"{where}: its Triton kernels launched with an empty grid (no programs)"
            else:
                reason = f"{where}: its Triton kernels ran but stored nothing (no work)"
            if reason not in self.hack_reasons:
                self.hack_reasons.append(reason)

    def _check_tampering(self, tampered: Sequence[str]) -> None:
        if tampered:
            reason = "replaced functions the judge relies on: " + ", ".join(tampered)
            if reason not in self.hack_reasons:
                self.hack_reasons.append(reason)
            raise _Stop(pb.VERDICT_HACKED, reason, self.hack_reasons)

    def _check_problems(self, problems: Sequence[Problem], where: str) -> None:
        hacks = [f"{where}: {p.message}" for p in problems if p.severity == "hack"]
        if hacks:
            self.hack_reasons.extend(hacks)
            raise _Stop(pb.VERDICT_HACKED, "; ".join(hacks), self.hack_reasons)
        wrong = [p.message for p in problems if p.severity == "incorrect"]
        if wrong:
            raise _Stop(pb.VERDICT_INCORRECT, f"{where}: " + "; ".join(wrong))
