"""One training run: the orchestrator's rollouts, the learner's update, the weight sync, and
the records (metrics.jsonl, checkpoints) that let a run be watched and resumed.

Single controller: every rank builds the learner; rank 0 also runs the orchestrator (local
or remote policy and sandbox services, rollouts, advantages and masks) and broadcasts each
step's rows. The learner recomputes log-probs; MRS compares them with the policy server's
(identically on every rank); the learner applies the rows' advantages and masks; rank 0
pushes the new weights as ``weights_version = step``.

With a metrics port (the training job on Kubernetes) local rank 0 of each node serves
Prometheus ``/metrics``, and rank 0 sets the step gauges of ``services/trainer/metrics.py``
under the run directory's name, with ``drkernel_trainer_active_runs`` at 1 while it trains.
"""

from __future__ import annotations

import json
import random
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AsyncExitStack, ExitStack, contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from drkernel.background import BackgroundLoop
from drkernel.config import load_settings
from drkernel.logs import get_logger
from drkernel.serving import serve_metrics
from services.policy.client import PolicyClient
from services.sandbox.client import SandboxClient, local_sandbox
from services.trainer import distributed, metrics
from services.trainer.advantages import build_rows
from services.trainer.checkpoint import latest_checkpoint, prune_checkpoints
from services.trainer.curriculum import TaskSampler
from services.trainer.environments import Environment, SandboxEnvironment, Task, TokenTargetEnvironment
from services.trainer.learner import Learner
from services.trainer.mismatch import mrs_decisions
from services.trainer.report import METRICS_FILE
from services.trainer.rollout import Rollouts
from services.trainer.rows import TrainingRow, Trajectory
from services.trainer.run_config import RunConfig, dump_run_config
from services.trainer.task_sets import split_tasks
from services.trainer.weight_sync import push_weights

log = get_logger(__name__)

# Where a fresh start puts the records of an earlier attempt in the same directory that left
# no checkpoint (``drkernel train --auto-resume``), so that metrics.jsonl is this run's alone.
DISCARDED_METRICS_FILE = "metrics.discarded.jsonl"


def resolve_model(config: RunConfig) -> Path:
    """The model directory: the configured one, or the embedded default (converted once)."""
    if config.model is not None:
        return config.model
    from services.policy.default_model import ensure_default_model

    return ensure_default_model(load_settings().policy.cache_dir)


class Services:
    """The orchestrator's connections: remote services when the config names addresses,
    otherwise servers started here on loopback (the embedded default). The security section
    applies to both."""

    def __init__(self, config: RunConfig, model_dir: Path, device: str, dtype: str) -> None:
        self.loop = BackgroundLoop()
        self._settings = load_settings()
        self.security = self._settings.security
        self._servers = AsyncExitStack()  # the servers started here, stopped in reverse order
        addresses = config.services
        policy_address = addresses.policy or self._start_policy(config, model_dir, device, dtype)
        sandbox_address = ""
        if config.environment.kind == "sandbox":
            sandbox_address = addresses.sandbox or self._start_sandbox(config)
        self.policy = self.loop.run(
            _make(PolicyClient, policy_address, config.rollout.generation_concurrency, security=self.security)
        )
        self.sandbox = (
            self.loop.run(
                _make(SandboxClient, sandbox_address, config.rollout.evaluation_concurrency, security=self.security)
            )
            if sandbox_address
            else None
        )

    def _start_policy(self, config: RunConfig, model_dir: Path, device: str, dtype: str) -> str:
        from services.policy.server import local_policy

        defaults = self._settings.policy
        settings = defaults.model_copy(
            update={
                "backend": config.services.policy_backend,
                "model": model_dir,
                "device": device,
                "dtype": dtype,
                "max_tokens_cap": max(config.rollout.max_tokens, defaults.max_tokens_cap),
            }
        )
        return str(self.loop.run(self._servers.enter_async_context(local_policy(settings, self.security))))

    def _start_sandbox(self, config: RunConfig) -> str:
        sandbox = local_sandbox(self._settings.sandbox, self.security, cpu_workers=config.services.sandbox_workers)
        return str(self.loop.run(self._servers.enter_async_context(sandbox)))

    def environment(self, config: RunConfig) -> Environment:
        if config.environment.kind == "token_target":
            return TokenTargetEnvironment(config.environment.target_token_ids)
        assert self.sandbox is not None
        return SandboxEnvironment(self.sandbox, config.rollout, config.reward)

    def close(self) -> None:
        for client in (self.policy, self.sandbox):
            if client is not None:
                self.loop.run(client.close())
        self.loop.run(self._servers.aclose())
        self.loop.close()


async def _make(cls: Any, *args: Any, **kwargs: Any) -> Any:
    """Builds an async client on the background loop (its channel binds to that loop)."""
    return cls(*args, **kwargs)


@dataclass
class StepRecord:
    """One line of metrics.jsonl (the keys the trainer service and dashboards read)."""

    step: int
    reward_mean: float
    correct_rate: float
    hacked_rate: float
    mrs_rejected_rate: float
    prs_rejected_rate: float
    veto_rate: float
    logprob_mismatch: float
    weights_version: int
    seconds_generating: float
    seconds_evaluating: float
    seconds_logprobs: float
    seconds_updating: float
    seconds_syncing: float
    seconds_step: float
    extra: dict[str, float]

    def values(self) -> dict[str, float]:
        """The flat object of the line: every field, the extra keys beside them."""
        fields = asdict(self)
        extra = fields.pop("extra")
        return {**fields, **extra}

    def line(self) -> str:
        return json.dumps(self.values())


def rollout_rates(trajectories: list[Trajectory]) -> dict[str, float]:
    """Reward and verdict shares over every turn, plus the mean reward of each turn index."""
    turns = [t for trajectory in trajectories for t in trajectory.turns]
    count = max(len(turns), 1)
    rates = {
        "reward_mean": sum(t.reward for t in turns) / count,
        "correct_rate": sum(t.correct for t in turns) / count,
        "hacked_rate": sum(t.hacked for t in turns) / count,
        "failed_rate": sum(t.failed for t in turns) / count,
        "completion_tokens_mean": sum(len(t.completion_ids) for t in turns) / count,
    }
    by_turn: dict[int, list[float]] = {}
    for trajectory in trajectories:
        for index, turn in enumerate(trajectory.turns):
            by_turn.setdefault(index + 1, []).append(turn.reward)
    for index, rewards in by_turn.items():
        rates[f"reward_turn_{index}"] = sum(rewards) / len(rewards)
    return rates


class _StopRequested:
    """SIGTERM/SIGINT ask for a stop after the current step (checkpointed), not a crash."""

    def __init__(self) -> None:
        self.requested = False

    @contextmanager
    def installed(self) -> Iterator[None]:
        def handler(signum: int, frame: object) -> None:
            log.warning("stop requested; finishing the current step", signal=signum)
            self.requested = True

        previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)


def train(
    config: RunConfig, out_dir: Path, resume: bool = False, progress: bool = True, metrics_port: int | None = None
) -> int:
    """Runs (or resumes) a run to ``config.steps``; returns the last step done. A fresh run
    (not ``resume``) starts its own metrics.jsonl: one already in ``out_dir`` is set aside as
    DISCARDED_METRICS_FILE. ``metrics_port``: serve Prometheus metrics there (module doc)."""
    rank, world, device = distributed.init_distributed()
    stop = _StopRequested()
    try:
        with ExitStack() as exporting, stop.installed():
            record_step = None
            if metrics_port is not None:
                if distributed.local_rank() == 0:
                    endpoint = serve_metrics(metrics_port)
                    exporting.callback(endpoint.server_close)
                    exporting.callback(endpoint.shutdown)
                    log.info("serving metrics", port=endpoint.server_port, rank=rank)
                if rank == 0:
                    record_step = exporting.enter_context(metrics.active_run(out_dir.name))
            return _Run(config, out_dir, rank, world, device, record_step).run(resume, stop, progress)
    finally:
        distributed.shutdown()


class _Run:
    def __init__(
        self,
        config: RunConfig,
        out_dir: Path,
        rank: int,
        world: int,
        device: Any,
        record_step: Callable[[Mapping[str, float]], None] | None = None,
    ) -> None:
        self.config, self.out_dir, self.rank, self.world = config, out_dir, rank, world
        self.record_step = record_step  # rank 0 with a metrics port: the step gauges
        self.lead = rank == 0
        self.train_tasks, _ = split_tasks(config.tasks)
        self.tasks_by_name = {t.name: t for t in self.train_tasks}
        model_dir = resolve_model(config) if self.lead else None
        model_dir = distributed.broadcast_object(model_dir)
        self.learner = Learner(config, model_dir, device)
        self.sampler = TaskSampler(
            [t.name for t in self.train_tasks],
            config.seed,
            config.curriculum,
            config.rollout.tasks_per_step,
            window_steps=config.curriculum.window_steps,
        )
        self.prs_rng = random.Random(config.seed)
        self.model_dir, self.device = model_dir, device
        self.services: Services | None = None

    def run(self, resume: bool, stop: _StopRequested, progress: bool) -> int:
        config, out = self.config, self.out_dir
        step = self._restore() if resume else 0
        if self.lead:
            out.mkdir(parents=True, exist_ok=True)
            if not resume and (out / METRICS_FILE).exists():
                (out / METRICS_FILE).replace(out / DISCARDED_METRICS_FILE)
                log.warning("starting fresh: the earlier records are set aside", path=str(out / DISCARDED_METRICS_FILE))
            (out / "config.yaml").write_text(dump_run_config(config))
            self.services = Services(config, self.model_dir, self.device.type, self.learner.dtype_name)
        try:
            if step and self.lead:
                self._sync(step)  # the policy starts from the initial weights; serve the resumed ones
            bar = _progress(config.steps, step, enabled=progress and self.lead)
            while step < config.steps:
                step += 1
                self._step(step)
                bar.update(1)
                stopping = distributed.broadcast_object(stop.requested if self.lead else None)
                if step % config.checkpoint.every_steps == 0 or step == config.steps or stopping:
                    self._checkpoint(step)
                if stopping:
                    log.warning("stopped after a checkpoint", step=step)
                    break
            bar.close()
            return step
        finally:
            if self.services is not None:
                self.services.close()

    def _restore(self) -> int:
        directory = latest_checkpoint(self.out_dir / "checkpoints")
        if directory is None:
            raise FileNotFoundError(f"no complete checkpoint under {self.out_dir / 'checkpoints'}")
        extra = self.learner.load_checkpoint(directory)
        self.sampler.load_state_dict(extra["sampler"])
        self.prs_rng.setstate(_rng_state(extra["prs_rng"]))
        log.info("resumed", checkpoint=str(directory), step=extra["step"])
        return int(extra["step"])

    def _checkpoint(self, step: int) -> None:
        directory = self.out_dir / "checkpoints" / f"step_{step}"
        extra = {"step": step, "sampler": self.sampler.state_dict(), "prs_rng": self.prs_rng.getstate()}
        self.learner.save_checkpoint(directory, extra)
        if self.config.checkpoint.export_hf:
            self.learner.export_hf(directory / "hf")
        if self.lead:
            prune_checkpoints(self.out_dir / "checkpoints", self.config.checkpoint.keep)

    def _rollouts(self, step: int) -> tuple[list[TrainingRow], dict[str, float], float, float]:
        """Rank 0: one step's trajectories turned into rows; plus rates and seconds."""
        assert self.services is not None
        names = self.sampler.next_tasks()
        tasks: list[Task] = [self.tasks_by_name[name] for name in names]
        rollouts = Rollouts(
            self.services.policy, self.services.environment(self.config), self.config.rollout, self.config.seed
        )
        trajectories = self.services.loop.run(rollouts.step(tasks, step))
        for name in names:
            turns = [t for tr in trajectories if tr.task == name for t in tr.turns]
            self.sampler.observe(name, sum(t.correct for t in turns) / max(len(turns), 1))
        rows, row_stats = build_rows(trajectories, self.config.advantage, self.config.prs, self.prs_rng)
        rates = {**rollout_rates(trajectories), **{k: float(v) for k, v in asdict(row_stats).items()}}
        stale = [
            t
            for tr in trajectories
            for t in tr.turns
            if step - 1 - t.weights_version > self.config.sync.max_off_policy_steps
        ]
        if stale:
            raise RuntimeError(f"{len(stale)} completions came from weights older than the staleness bound allows")
        turns = [t for tr in trajectories for t in tr.turns]
        return rows, rates, sum(t.seconds_generating for t in turns), sum(t.seconds_evaluating for t in turns)

    def _step(self, step: int) -> None:
        started = time.perf_counter()
        payload = self._rollouts(step) if self.lead else None
        rows, rates, generating, evaluating = distributed.broadcast_object(payload)
        rollout_seconds = time.perf_counter() - started

        mark = time.perf_counter()
        learner_logprobs = self.learner.logprobs(rows)
        mrs = mrs_decisions(rows, learner_logprobs, self.config.mrs)
        rows = [replace(row, keep=row.keep and keep) for row, keep in zip(rows, mrs.keep, strict=True)]
        logprob_seconds = time.perf_counter() - mark

        mark = time.perf_counter()
        reference = self.learner.reference_logprobs(rows) if self.config.loss.kl_coef > 0 else None
        update = self.learner.update(rows, learner_logprobs, reference)
        update_seconds = time.perf_counter() - mark

        mark = time.perf_counter()
        sync_bytes = self._sync(step)
        sync_seconds = time.perf_counter() - mark
        if not self.lead:
            return
        extra = {k: v for k, v in rates.items() if k not in ("reward_mean", "correct_rate", "hacked_rate")}
        extra.update({f"update_{k}": float(v) for k, v in asdict(update).items()})
        extra.update(
            {
                "rows": float(len(rows)),
                "rows_kept": float(sum(r.keep for r in rows)),
                "seconds_rollouts": rollout_seconds,
                "sync_bytes": float(sync_bytes),
            }
        )
        record = StepRecord(
            step=step,
            reward_mean=rates["reward_mean"],
            correct_rate=rates["correct_rate"],
            hacked_rate=rates["hacked_rate"],
            mrs_rejected_rate=mrs.trajectory_rejected_rate,
            prs_rejected_rate=rates.get("prs_rejected_rate", 0.0),
            veto_rate=mrs.veto_rate,
            logprob_mismatch=mrs.logprob_mismatch,
            weights_version=step,
            seconds_generating=generating,
            seconds_evaluating=evaluating,
            seconds_logprobs=logprob_seconds,
            seconds_updating=update_seconds,
            seconds_syncing=sync_seconds,
            seconds_step=time.perf_counter() - started,
            extra=extra,
        )
        with (self.out_dir / METRICS_FILE).open("a") as stream:
            stream.write(record.line() + "\n")
        log.info("step", **record.values())
        if self.record_step is not None:
            self.record_step(record.values())

    def _sync(self, version: int) -> int:
        """Collective: gathers full weights (rank 0) and pushes them to the policy."""
        tensors = self.learner.full_state_dict()
        if not self.lead or tensors is None:
            return 0
        assert self.services is not None
        result = self.services.loop.run(
            push_weights(self.services.policy, tensors, version, self.config.sync, self.out_dir / "weights")
        )
        return result.bytes


def _rng_state(state: Any) -> tuple[Any, ...]:
    """random.Random state back from JSON (lists where it had tuples)."""
    version, internal, gauss = state
    return (version, tuple(internal), gauss)


def _progress(total: int, done: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, initial=done, desc="training", unit="step", disable=not enabled)
