"""The timing stage, and the statistics of timed trials.

The judge times the reference and the candidate's process times the candidate, trial by trial,
interleaved on one device (shared/clock.py), with spot checks of what timed calls returned;
launch-bound models are replayed from CUDA graphs; a correct candidate is timed once more with
each model alone, and the lower speedup counts.
"""

from __future__ import annotations

import dataclasses
import math
import secrets
import statistics
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch

from services.sandbox.judge.candidate_client import JudgeOutOfMemory
from services.sandbox.judge.compare import compare_outputs
from services.sandbox.judge.memory import is_out_of_memory
from services.sandbox.judge.stages import Ended, NotJudged, Stop
from services.sandbox.shared.clock import sample_values
from services.sandbox.shared.evaluation import RuntimeStats, TimingReport, Verdict
from services.sandbox.wire.judge_candidate import CandidateFailed, RunSpec

if TYPE_CHECKING:
    from services.sandbox.judge.funnel import Evaluation

# Untimed trials of each model before it is timed alone (retime_alone).
_ALONE_WARMUPS = 2
# Timed calls spot-checked per trial besides the last, drawn after the trial.
_SAMPLED_CALLS = 4
_RANDOM = secrets.SystemRandom()
_ALONE_EXIT_WAIT_SECONDS = 2.0


def summarize(samples_us: Sequence[float], trim_fraction: float) -> RuntimeStats:
    """Robust statistics of timed runs (microseconds, unrounded)."""
    ordered = sorted(samples_us)
    count = len(ordered)
    cut = int(count * trim_fraction)
    trimmed = ordered[cut : count - cut] or ordered
    mean = statistics.fmean(ordered)
    stdev = statistics.stdev(ordered) if count > 1 else 0.0
    return RuntimeStats(
        trials=count,
        median_us=statistics.median(ordered),
        mean_us=mean,
        trimmed_mean_us=statistics.fmean(trimmed),
        min_us=ordered[0],
        max_us=ordered[-1],
        stdev_us=stdev,
        coefficient_of_variation=stdev / mean if mean > 0 else 0.0,
    )


def precise(samples_us: Sequence[float], relative_error: float) -> bool:
    """Whether the median of these samples is known to ``relative_error`` (its standard error,
    1.253 * stdev / sqrt(n) for near-normal samples, over the median)."""
    if len(samples_us) < 3:
        return False
    median = statistics.median(samples_us)
    return median > 0 and 1.253 * statistics.stdev(samples_us) / math.sqrt(len(samples_us)) / median < relative_error


class TimingStage:
    """Times one evaluation's candidate against its reference; ``report`` and ``speedup`` are
    what it measured (no report until it ran)."""

    def __init__(self, evaluation: Evaluation) -> None:
        self.evaluation = evaluation
        self.request, self.settings, self.device = evaluation.request, evaluation.settings, evaluation.device
        self.reference, self.candidate, self.clock = evaluation.reference, evaluation.candidate, evaluation.clock
        self.evidence = evaluation.evidence
        self.report: TimingReport | None = None
        self.speedup = 0.0

    def run(self) -> Ended:
        """The stage: skipped by request; on CPU timed but never valid for a speedup; on a GPU
        a speedup above ``recheck_speedup_above`` is measured again and the lower one kept."""
        if self.request.options.skip_timing:
            self.report = TimingReport(invalid_reason="timing skipped by request")
            return Ended.skipped("skipped by request")
        timing = self.settings.timing
        cuda = self.device.type == "cuda"
        trials = (self.request.options.timing_trials or timing.trials) if cuda else timing.cpu_trials
        warmups = (self.request.options.warmup_trials or timing.warmup_trials) if cuda else 0
        speedup = self._retried_round(trials, warmups, first_input=1000)
        if cuda and speedup > timing.recheck_speedup_above:
            first = self.report
            again = self._retried_round(trials, warmups, first_input=5000)
            if again > speedup:
                self.report = first
            speedup = min(speedup, again)
        assert self.report is not None  # a timing round that returns has reported
        if not cuda:
            self.report = dataclasses.replace(
                self.report, invalid_reason="CPU interpreter timing is not comparable to GPU execution"
            )
            return Ended.passed(f"{trials} interpreter trial(s), not valid for speedup")
        replay = "calls replayed from a CUDA graph" if self.report.cuda_graph else "eager calls"
        self.report = dataclasses.replace(
            self.report,
            valid=True,
            method=(
                f"CUDA events on the timed stream; {timing.l2_flush_bytes >> 20} MiB L2 flush, persisting L2 reset, "
                f"fresh inputs per trial, {replay}; reference and candidate interleaved on one GPU"
            ),
        )
        self.speedup = speedup
        return Ended.passed(f"speedup {speedup:.3f}x over {trials} interleaved trials ({replay})")

    def _retried_round(self, trials: int, warmups: int, first_input: int) -> float:
        """A timing round; one that runs out of device memory (the candidate passed every
        check at these sizes, so the memory is taken by other work or by timing's own fresh
        inputs) is run again once the judge has freed its caches and graph, then not judged."""
        for attempt in (1, 2):
            try:
                return self._round(trials, warmups, first_input)
            except JudgeOutOfMemory as error:
                if attempt == 2:
                    raise NotJudged(
                        f"device memory ran out while timing, after the judge freed its own: {error}"
                    ) from error
                self.reference.release_graph()
                self.reference.drop_cache()
        raise AssertionError("unreachable")

    def _round(self, trials: int, warmups: int, first_input: int) -> float:
        timing = self.settings.timing
        cuda = self.device.type == "cuda"
        ref_us: list[float] = []
        cand_us: list[float] = []
        late_us: list[float] = []
        calls = 1
        graph = False
        fastest = math.inf
        trial = 0
        while trial < warmups + trials:
            spec = self.evaluation.spec(inputs=first_input + trial)
            order = (True, False) if trial % 2 == 0 else (False, True)
            for is_reference in order:
                if is_reference:
                    try:
                        timed = self.reference.time_trial(spec, self.clock, calls, graph=graph)
                    except torch.OutOfMemoryError as error:
                        raise JudgeOutOfMemory(f"the reference: {error}") from error
                    ref_stream = timed.stream_us
                else:
                    try:
                        result = self.candidate.time_trial(spec, calls, graph=graph)
                    except CandidateFailed as error:
                        if error.kind == "resources" or is_out_of_memory(error):
                            raise JudgeOutOfMemory(f"the candidate's process: {error}") from error
                        raise Stop(Verdict.RUNTIME_ERROR, f"during timing: {error}") from error
                    self.evaluation.check_tampering(result.tampered)
                    if not graph:  # a replayed graph launches nothing from Python: its capture was checked
                        self.evaluation.check_launches(result.launches, f"timed run {trial}")
                    cand_stream, cand_late = result.stream_us, result.late_us
            self._check_timed_results(trial, timed.outputs)
            self.evidence.stop_if_any()
            if trial < warmups and trial >= 2 and min(ref_stream, cand_stream) * calls > timing.long_call_us:
                warmups = trial + 1  # long calls: three warm-ups are plenty, the rest would only cost
            if trial >= warmups:
                ref_us.append(ref_stream)
                cand_us.append(cand_stream)
                late_us.append(cand_late)
                if (
                    len(ref_us) >= min(timing.min_trials, trials)
                    and precise(ref_us, timing.median_precision)
                    and precise(cand_us, timing.median_precision)
                ):
                    break
            elif cuda:
                # Calls per trial are chosen halfway through the warm-ups from the fastest
                # single calls seen, once first-call costs are gone, and then kept; the rest
                # of the warm-ups replay the graph when both models could be captured, and a
                # graph whose trial is too short for steady timing is captured again with more
                # calls.
                fastest = min(fastest, ref_stream, cand_stream)
                if trial == (warmups - 1) // 2:
                    calls = max(1, min(timing.max_calls_per_trial, math.ceil(timing.min_trial_us / max(fastest, 1.0))))
                    graph = calls > 1 and timing.cuda_graphs and self._capture_graphs(spec, calls)
                elif graph and trial == (warmups - 1) // 2 + 1:
                    replayed = math.ceil(timing.graph_min_trial_us / max(min(ref_stream, cand_stream), 0.5))
                    more = min(timing.max_graph_calls, replayed)
                    if more > calls:
                        graph = self._capture_graphs(spec, more)
                        calls = more if graph else calls  # eager again, with the calls chosen for eager
            trial += 1
        self.report = dataclasses.replace(
            self.report or TimingReport(), calls_per_trial=calls, warmup_trials=warmups, cuda_graph=graph
        )
        if cuda:
            late = statistics.median(late_us)
            self.report = dataclasses.replace(self.report, late_device_work_us=late)
            if late > timing.side_stream_slack_us:
                self.evidence.stop(
                    f"device work it started was still running {late:.1f} us (median) after "
                    "forward returned and the timed stream had finished "
                    "(hidden on another stream, outside the timed region)"
                )
        reference, candidate = summarize(ref_us, timing.trim_fraction), summarize(cand_us, timing.trim_fraction)
        self.report = dataclasses.replace(self.report, reference=reference, candidate=candidate)
        return reference.median_us / candidate.median_us if candidate.median_us > 0 else 0.0

    def retime_alone(self) -> None:
        """Times both models once more, each with nothing of the other running, and keeps the
        lower of the interleaved and the alone speedup. While the two interleave, the
        candidate's process is alive between its calls, and a thread of it can keep the GPU
        busy exactly while the reference is timed (contexts time-slice): a slowed reference
        would inflate the speedup. So the candidate is timed alone (the judge idle), then the
        reference alone once the candidate's process has exited. Both alone, so that whatever
        else the GPU or host did meanwhile does not favour one side: keeping only a quieter
        reference median made launch-bound speedups bimodal. Cheating in the alone phase buys
        nothing (only the lower speedup counts); an honest candidate loses only noise."""
        report = self.report
        assert report is not None and report.candidate is not None  # only a valid timing is re-timed
        calls, graph = report.calls_per_trial, report.cuda_graph
        trim = self.settings.timing.trim_fraction
        candidate = report.candidate  # kept if the candidate fails now: the reference is still re-timed
        try:
            candidate_us = self._alone(lambda spec: self.candidate.time_trial(spec, calls, graph=graph).stream_us, 8000)
            candidate = summarize(candidate_us, trim)
        except CandidateFailed:
            pass
        self.candidate.close(wait_seconds=_ALONE_EXIT_WAIT_SECONDS)
        try:
            reference_us = self._alone(
                lambda spec: self.reference.time_trial(spec, self.clock, calls, graph=graph).stream_us, 9000
            )
        except torch.OutOfMemoryError:  # the candidate is gone: only other work can hold the memory
            self.report = dataclasses.replace(
                report, method=report.method + "; not timed alone (device memory taken by other work)"
            )
            return
        reference = summarize(reference_us, trim)
        alone = reference.median_us / candidate.median_us if candidate.median_us > 0 else 0.0
        report = dataclasses.replace(
            report,
            method=f"{report.method}; each also timed alone (speedup {alone:.3f}x, interleaved "
            f"{self.speedup:.3f}x), the lower speedup kept",
        )
        if alone < self.speedup:
            report = dataclasses.replace(report, reference=reference, candidate=candidate)
            self.speedup = alone
        self.report = report

    def _alone(self, time_trial: Callable[[RunSpec], float], first_input: int) -> list[float]:
        """One model's trials timed alone, after ``_ALONE_WARMUPS`` untimed ones: as many as the
        interleaved trials need (``min_trials`` at least, until its median is ``precise``, at most
        ``trials``), so the alone speedup is no noisier than the interleaved one."""
        timing = self.settings.timing
        for trial in range(_ALONE_WARMUPS):
            time_trial(self.evaluation.spec(inputs=first_input + trial))
        samples: list[float] = []
        while len(samples) < timing.trials and not (
            len(samples) >= timing.min_trials and precise(samples, timing.median_precision)
        ):
            samples.append(time_trial(self.evaluation.spec(inputs=first_input + _ALONE_WARMUPS + len(samples))))
        return samples

    def _capture_graphs(self, spec: RunSpec, calls: int) -> bool:
        """Captures both models' calls as CUDA graphs; True only if both could be (timing the
        two the same way). The candidate's capture must launch its own kernels."""
        captured = self.candidate.capture_graph(spec, calls)
        if captured.error:
            return False
        self.evaluation.check_launches(captured.launches, "the calls captured for timing")
        self.evidence.stop_if_any()
        return not self.reference.capture_graph(spec, calls)

    def _check_timed_results(self, trial: int, reference_calls: list[list[torch.Tensor]]) -> None:
        """Spot-checks what timed calls returned, at positions and calls drawn only now: the
        last call and a few others at random. Outputs that a later call of the trial
        overwrote (a reused buffer) are left out, never the last call's."""
        seed = secrets.randbits(62)
        count = len(reference_calls)
        chosen = sorted({count - 1, *_RANDOM.sample(range(count), min(count, _SAMPLED_CALLS))})
        got, superseded = self.candidate.sample(seed, chosen)
        superseded -= set(
            range(sum(len(reference_calls[i]) for i in chosen[:-1]), sum(len(reference_calls[i]) for i in chosen))
        )
        want = [
            value
            for position, value in enumerate(v for i in chosen for v in sample_values(reference_calls[i], seed))
            if position not in superseded
        ]
        dtypes = [t.dtype for t in want]
        floating = next((d for d in dtypes if d.is_floating_point), torch.float32)
        if not compare_outputs(got, want, dtypes, self.evaluation.tolerance(floating)).passed:
            self.evidence.add(
                f"timed run {trial} returned a different result than the reference on the same fresh "
                "inputs (outputs cached, stale or computed differently while timed)"
            )
