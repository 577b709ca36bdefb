"""One benchmark, start to finish: what to judge (a generations file, or a policy to sample),
the sandbox(es) that judge it through a results cache, the baselines, and the report.

Inputs are checked before anything starts: the task set, every generation's task (an unknown
one is a skipped line, never fatal), the sandboxes' device (servers on different devices are
refused: their timings cannot be pooled).
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import platform
import sys
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tqdm import tqdm

import drkernel
from drkernel.config import Settings
from drkernel.errors import InvalidArgument
from drkernel.v1 import common_pb2
from services.policy.prompting import ExtractionError, extract_code
from services.sandbox.client import SandboxClient, SandboxPool, connect, local_sandbox
from services.trainer.bench.baselines import should_time, time_baselines
from services.trainer.bench.cache import CACHE_FILE, CachedSandbox, ResultCache
from services.trainer.bench.generations import Generation, SkippedLine, read_generations, write_generations
from services.trainer.bench.refinement import refine
from services.trainer.bench.report_files import write_all
from services.trainer.bench.schema import Baselines, GenerationResult, Report, RunInfo
from services.trainer.bench.summary import (
    best_of_n_points,
    generation_result,
    latency,
    summarize,
    task_rows,
    turn_points,
    with_compile_speedups,
)
from services.trainer.bench.tasks import (
    BenchTask,
    TaskSet,
    kernelbench_id,
    load_task_set,
    restricted,
    tasks_named_by,
)
from services.trainer.environments import Assessment, SandboxEnvironment
from services.trainer.run_config import RolloutSettings
from services.trainer.settings import BenchSettings

GENERATIONS_FILE = "generations.jsonl"
_KINDS = {common_pb2.DEVICE_CPU: "cpu", common_pb2.DEVICE_CUDA: "cuda"}


@dataclass(frozen=True)
class Plan:
    """What a benchmark judges: the task set and either the generations read from a file
    (each with its task) or nothing yet (a policy writes them)."""

    task_set: TaskSet
    generations: list[tuple[BenchTask, Generation]]
    skipped: list[SkippedLine]
    generations_file: Path | None = None


def plan_generations(path: Path, tasks: str | None, levels: Sequence[int] = (), problems: Sequence[str] = ()) -> Plan:
    """Reads a generations file (or KernelBench run folder) and finds each line's task in the
    task set (by default the tasks the file names); lines naming no task of the set, or the
    same (task, sample, turn) as an earlier line, are skipped."""
    if not path.exists():
        raise InvalidArgument(f"--generations: no such file or folder: {path}")
    generations, skipped = read_generations(path)
    base_dir = path if path.is_dir() else path.parent
    if tasks:
        task_set = load_task_set(tasks, levels, problems)
    else:
        task_set = tasks_named_by([g.task for g in generations], base_dir)
        if task_set.tasks and (levels or problems):
            task_set = restricted(task_set, levels, problems)
    planned: list[tuple[BenchTask, Generation]] = []
    seen: dict[tuple[str, int, int], int] = {}
    for generation in generations:
        task = task_set.resolve(generation.task, base_dir)
        if task is None:
            hint = " (a KernelBench id needs --tasks CHECKOUT)" if not tasks and kernelbench_id(generation.task) else ""
            skipped.append(
                SkippedLine(
                    generation.line,
                    f"no task {generation.task!r} in the task set{hint}",
                    generation.where or str(path),
                )
            )
            continue
        resolved = dataclasses.replace(generation, task=task.id)
        if resolved.key in seen:
            skipped.append(
                SkippedLine(
                    generation.line,
                    f"repeats task {task.id} sample {resolved.sample} turn {resolved.turn} "
                    f"of line {seen[resolved.key]}",
                    generation.where or str(path),
                )
            )
            continue
        seen[resolved.key] = generation.line
        planned.append((task, resolved))
    if not task_set.tasks:
        raise InvalidArgument(f"{path}: no line names a task that could be found (give the task set with --tasks)")
    return Plan(task_set, planned, sorted(skipped, key=lambda s: s.line), path)


def module_of(code: str) -> str:
    """The module to judge: the code as written when it parses, else the module a raw answer
    holds (fenced block, reasoning around it), else the code as written (a syntax error)."""
    try:
        ast.parse(code)
        return code
    except (SyntaxError, ValueError):
        pass
    try:
        return extract_code(code)
    except ExtractionError:
        return code


async def sandbox_device(client: SandboxClient | SandboxPool, requested: str) -> str:
    """The judge's device as ``kind:name`` (part of every cache key), the same on every server."""
    described = await client.describe()
    descriptions = described if isinstance(described, list) else [described]
    identities: set[str] = set()
    for description in descriptions:
        kind = requested if requested != "auto" else _KINDS.get(description.default_device, "cpu")
        names = sorted({w.device_name for w in description.workers if _KINDS.get(w.device) == kind})
        if not names:
            raise InvalidArgument(f"a sandbox server has no {kind} worker (--device {requested})")
        identities.update(f"{kind}:{name}" for name in names)
    if len(identities) > 1:
        raise InvalidArgument(
            f"the sandbox servers judge on different devices ({', '.join(sorted(identities))}): their timings "
            "cannot be pooled; benchmark each device separately"
        )
    return identities.pop()


def rollout_settings(settings: BenchSettings) -> RolloutSettings:
    """The bench settings in the shape the environment and the rollouts read them."""
    return RolloutSettings(
        tasks_per_step=1,
        samples_per_task=settings.samples,
        turns=settings.turns,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        top_p=settings.top_p,
        history_turns=settings.history_turns,
        history_window="best_reward",
        generation_concurrency=settings.generation_concurrency,
        evaluation_concurrency=settings.evaluation_concurrency,
        evaluation_timeout_seconds=settings.evaluation_timeout_seconds,
        correctness_profile=settings.correctness_profile,
        device=settings.device,
        evaluation_seed=settings.seed,
    )


async def _judge_generations(
    planned: Sequence[tuple[BenchTask, Generation]], environment: SandboxEnvironment, progress: bool
) -> list[tuple[Generation, Assessment]]:
    with tqdm(total=len(planned), desc="judging", unit="kernel", file=sys.stderr, disable=not progress) as bar:

        async def one(task: BenchTask, generation: Generation) -> tuple[Generation, Assessment]:
            assessment = await environment.assess_code(task.task(), module_of(generation.code))
            bar.update(1)
            return generation, assessment

        return list(await asyncio.gather(*(one(task, g) for task, g in planned)))


async def _policy_address(stack: AsyncExitStack, root: Settings, settings: BenchSettings) -> str:
    if settings.policy:
        return settings.policy
    from services.policy.server import local_policy
    from services.trainer.loop import resolve_model
    from services.trainer.run_config import RunConfig

    defaults = root.policy
    served = defaults.model_copy(
        update={
            "model": resolve_model(RunConfig(model=settings.model)),
            "max_tokens_cap": max(settings.max_tokens, defaults.max_tokens_cap),
        }
    )
    return str(await stack.enter_async_context(local_policy(served, root.security)))


async def _run(plan: Plan, root: Settings, settings: BenchSettings, out: Path, progress: bool) -> Report:
    started, clock = datetime.now(UTC), time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    cache = ResultCache(out / CACHE_FILE)
    reward = root.sandbox.reward
    rollout = rollout_settings(settings)
    seconds: dict[str, float] = {}
    failures: list[str] = []
    async with AsyncExitStack() as stack:
        addresses = list(settings.sandboxes)
        if not addresses:
            local = local_sandbox(root.sandbox, root.security, cpu_workers=settings.local_sandbox_workers)
            addresses = [str(await stack.enter_async_context(local))]
        client = connect(addresses, settings.evaluation_concurrency, security=root.security)
        stack.push_async_callback(client.close)
        device = await sandbox_device(client, settings.device)
        cached = CachedSandbox(client, cache, device)
        phase = time.perf_counter()
        if plan.generations_file is not None:
            judged = await _judge_generations(plan.generations, SandboxEnvironment(cached, rollout, reward), progress)
            seconds["judging"] = time.perf_counter() - phase
        else:
            from services.policy.client import PolicyClient

            policy = PolicyClient(
                await _policy_address(stack, root, settings), settings.generation_concurrency, security=root.security
            )
            stack.push_async_callback(policy.close)
            tasks = plan.task_set.tasks
            judged, failures = await refine(tasks, policy, cached, rollout, reward, settings.seed, progress)
            seconds["sampling_and_judging"] = time.perf_counter() - phase
    if plan.generations_file is None or plan.generations_file.is_dir():
        write_generations(out / GENERATIONS_FILE, [g for g, _ in judged])
    results = [generation_result(g.task, g.sample, g.turn, a.code or g.code, a) for g, a in judged]
    kind = device.split(":", 1)[0]
    reason = should_time(settings.baselines, kind)
    baselines = Baselines(status="skipped", reason=reason or "")
    if reason is None:
        phase = time.perf_counter()
        solved = {r.task for r in results if r.correct}
        timed = [t for t in plan.task_set.tasks if t.id in solved]
        baselines = await time_baselines(
            timed,
            kind,
            device.split(":", 1)[1],
            settings.seed,
            root.sandbox.timing,
            settings.baseline_warmups,
            settings.baseline_trials,
            settings.baseline_timeout_seconds,
            cache,
            progress,
        )
        seconds["baselines"] = time.perf_counter() - phase
    results = with_compile_speedups(results, baselines)
    seconds["total"] = time.perf_counter() - clock
    return _report(plan, settings, results, baselines, device, started, seconds, cached, failures)


def _versions() -> dict[str, str]:
    import torch
    import triton

    return {
        "drkernel": drkernel.__version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
    }


def _report(
    plan: Plan,
    settings: BenchSettings,
    results: list[GenerationResult],
    baselines: Baselines,
    device: str,
    started: datetime,
    seconds: dict[str, float],
    cached: CachedSandbox,
    failures: list[str],
) -> Report:
    task_set = plan.task_set
    policy_mode = plan.generations_file is None
    run = RunInfo(
        source="policy" if policy_mode else "generations",
        generations_file=str(plan.generations_file) if plan.generations_file else None,
        policy=(settings.policy or "embedded") if policy_mode else None,
        model=str(settings.model) if policy_mode and settings.model else None,
        task_set=task_set.kind,
        task_root=str(task_set.root) if task_set.root else None,
        settings=settings.model_dump(mode="json"),
        sandboxes=list(settings.sandboxes),
        versions=_versions(),
        host=platform.node(),
        started=started.isoformat(timespec="seconds"),
        seconds=seconds,
        evaluations_reused=cached.hits,
        evaluations_judged=cached.judged,
        evaluation_seconds=latency(results),
        policy_failures=failures,
    )
    return Report(
        run=run,
        summary=summarize(
            task_set,
            results,
            baselines,
            profile=settings.correctness_profile,
            device=device,
            seed=settings.seed,
            skipped_lines=len(plan.skipped),
        ),
        turns=turn_points(task_set, results),
        best_of_n=best_of_n_points(task_set, results),
        baselines=baselines,
        tasks=task_rows(task_set, results),
        generations=results,
        skipped=[str(s) for s in plan.skipped],
    )


def bench(
    plan: Plan, root: Settings, settings: BenchSettings, out: Path, progress: bool = False
) -> tuple[Report, list[Path]]:
    """Runs the benchmark (``root``: the configuration the sandbox, policy and reward come
    from) and writes its report; returns it and the files written."""
    report = asyncio.run(_run(plan, root, settings, out, progress))
    return report, write_all(report, out)
