"""From judged generations to the report's numbers: per-generation results, the per-task
table, the summary, the turn curves and best-of-N (the definitions live in metrics.py)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence

from drkernel.v1 import sandbox_pb2 as pb
from services.trainer.bench import metrics
from services.trainer.bench.cache import digest
from services.trainer.bench.schema import (
    Baselines,
    BestOfN,
    GenerationResult,
    LevelSummary,
    Summary,
    TaskResult,
    TurnPoint,
)
from services.trainer.bench.tasks import TaskSet
from services.trainer.environments import Assessment

_ERROR_LINES = 6


def generation_result(task: str, sample: int, turn: int, code: str, assessment: Assessment) -> GenerationResult:
    """One generation's record from its judgement and the sandbox's response."""
    judgement, response = assessment.judgement, assessment.response
    timed = response is not None and response.timing.valid
    error = response.error if response is not None else ("" if judgement.correct else judgement.feedback)
    return GenerationResult(
        task=task,
        sample=sample,
        turn=turn,
        code_sha256=digest(code),
        verdict=judgement.verdict,
        correct=judgement.correct,
        hacked=judgement.hacked,
        reward=judgement.reward,
        speedup=response.speedup if timed and response is not None else None,
        speedup_compile=None,
        coverage=judgement.coverage,
        hack_reasons=list(response.hack_reasons) if response is not None else [],
        error="\n".join(error.strip().splitlines()[:_ERROR_LINES]),
        reference_us=_median(response, "reference"),
        candidate_us=_median(response, "candidate"),
        device_name=response.device_name if response is not None else "",
        evaluation_seconds=response.evaluation_seconds if response is not None else 0.0,
    )


def _median(response: pb.EvaluateResponse | None, which: str) -> float | None:
    if response is None or not response.timing.HasField(which):
        return None
    stats: pb.RuntimeStats = getattr(response.timing, which)
    return stats.median_us if stats.trials else None


def with_compile_speedups(results: Sequence[GenerationResult], baselines: Baselines) -> list[GenerationResult]:
    """Each timed result with its speedup over torch.compile, where its task was timed."""
    ratios = {b.task: b.compile_over_eager for b in baselines.tasks}
    return [
        r.model_copy(update={"speedup_compile": r.speedup * ratio})
        if r.speedup is not None and (ratio := ratios.get(r.task)) is not None
        else r
        for r in results
    ]


def _compile(outcome: metrics.Outcome) -> float | None:
    assert isinstance(outcome, GenerationResult)
    return outcome.speedup_compile


def _grouped(results: Sequence[GenerationResult]) -> dict[str, list[GenerationResult]]:
    grouped: dict[str, list[GenerationResult]] = {}
    for result in results:
        grouped.setdefault(result.task, []).append(result)
    return grouped


def task_rows(task_set: TaskSet, results: Sequence[GenerationResult]) -> list[TaskResult]:
    """One row per task of the set, judged by its chosen generation."""
    grouped = _grouped(results)
    rows = []
    for task in task_set.tasks:
        group = grouped.get(task.id, [])
        chosen = metrics.best(group)
        hacked = [r for r in group if r.hacked]
        reasons = list(dict.fromkeys(reason for r in hacked for reason in r.hack_reasons))
        base = TaskResult(task=task.id, name=task.name, level=task.level, generations=len(group), verdict="MISSING")
        if isinstance(chosen, GenerationResult):
            base = base.model_copy(
                update={
                    "verdict": chosen.verdict,
                    "sample": chosen.sample,
                    "turn": chosen.turn,
                    "correct": chosen.correct,
                    "speedup": chosen.speedup,
                    "speedup_compile": chosen.speedup_compile,
                    "coverage": chosen.coverage,
                    "reward": chosen.reward,
                    "error": chosen.error.splitlines()[0] if chosen.error else "",
                }
            )
        rows.append(base.model_copy(update={"hacked_generations": len(hacked), "hack_reasons": reasons}))
    return rows


def summarize(
    task_set: TaskSet,
    results: Sequence[GenerationResult],
    baselines: Baselines,
    *,
    profile: str,
    device: str,
    seed: int,
    skipped_lines: int,
) -> Summary:
    ids = task_set.ids
    grouped = _grouped(results)
    chosen: dict[str, metrics.Outcome | None] = {task: metrics.best(group) for task, group in grouped.items()}
    compiled = baselines.status == "timed"
    chosen_compile: dict[str, metrics.Outcome | None] = {
        task: metrics.best(group, _compile) for task, group in grouped.items()
    }
    count = max(len(ids), 1)
    judged = max(len(results), 1)
    return Summary(
        tasks=len(ids),
        generations=len(results),
        missing_tasks=sum(task not in grouped for task in ids),
        skipped_lines=skipped_lines,
        correctness_profile=profile,
        device=device,
        seed=seed,
        timing_valid=any(r.speedup is not None for r in results),
        fast_p=metrics.fast_p(chosen, ids),
        fast_p_compile=metrics.fast_p(chosen_compile, ids, _compile) if compiled else None,
        correct_rate=sum(metrics.is_fast(chosen.get(t), 0.0) for t in ids) / count,
        hacked_rate=sum(any(r.hacked for r in grouped.get(t, [])) for t in ids) / count,
        geomean_speedup=metrics.geometric_mean(metrics.speedups_of_correct(chosen)),
        geomean_speedup_compile=(
            metrics.geometric_mean(metrics.speedups_of_correct(chosen_compile, _compile)) if compiled else None
        ),
        generation_correct_rate=sum(r.correct for r in results) / judged,
        generation_hacked_rate=sum(r.hacked for r in results) / judged,
        verdicts=dict(sorted(Counter(r.verdict for r in results).items())),
        levels=_levels(task_set, chosen),
    )


def _levels(task_set: TaskSet, chosen: dict[str, metrics.Outcome | None]) -> list[LevelSummary]:
    levels: dict[str, list[str]] = {}
    for task in task_set.tasks:
        levels.setdefault(str(task.level) if task.level is not None else "other", []).append(task.id)
    return [
        LevelSummary(
            level=level,
            tasks=len(ids),
            correct_rate=sum(metrics.is_fast(chosen.get(t), 0.0) for t in ids) / len(ids),
            fast_p=metrics.fast_p(chosen, ids),
        )
        for level, ids in sorted(levels.items())
    ]


def turn_points(task_set: TaskSet, results: Sequence[GenerationResult]) -> list[TurnPoint]:
    return [
        TurnPoint(turn=t, last=last, best_so_far=so_far)
        for t, last, so_far in metrics.turn_curves(results, task_set.ids)
    ]


def best_of_n_points(task_set: TaskSet, results: Sequence[GenerationResult]) -> list[BestOfN]:
    return [BestOfN(n=n, fast_p=fast) for n, fast in metrics.best_of_n(results, task_set.ids)]


def latency(results: Sequence[GenerationResult]) -> dict[str, float]:
    """The judge's own time per evaluation, over distinct judged evaluations."""
    seconds = sorted({(r.task, r.code_sha256): r.evaluation_seconds for r in results if r.device_name}.values())
    if not seconds:
        return {}
    p90 = seconds[min(len(seconds) - 1, int(0.9 * len(seconds)))]
    return {"median": statistics.median(seconds), "p90": p90, "max": seconds[-1], "count": float(len(seconds))}
