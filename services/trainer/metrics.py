"""Prometheus metrics of training (RPC counts and latencies come from drkernel.serving).

A step's numbers reach Prometheus through ``record_step``: the trainer service calls it for
every new line of a run's metrics.jsonl, and a standalone ``drkernel train --metrics-port``
(the training job on Kubernetes) calls it in its own rank 0 process, inside ``active_run``.
Each known step key has a gauge of its own, labelled by run; the phase timings share one
gauge with a ``phase`` label so that a dashboard can stack them; any other numeric key lands
in ``drkernel_trainer_step_extra`` under its own name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial

import prometheus_client

RUNS_STARTED = prometheus_client.Counter(
    "drkernel_trainer_runs_started_total", "Run processes started (resumes included)."
)
RUNS_FINISHED = prometheus_client.Counter(
    "drkernel_trainer_runs_finished_total",
    "Runs that ended, by state (succeeded, failed, stopped).",
    ["state"],
)
RUNS_ACTIVE = prometheus_client.Gauge("drkernel_trainer_active_runs", "Runs pending or running now.")

_GAUGES: dict[str, prometheus_client.Gauge] = {
    "step": prometheus_client.Gauge("drkernel_trainer_step", "Last finished step of the run.", ["run"]),
    "reward_mean": prometheus_client.Gauge(
        "drkernel_trainer_reward_mean", "Mean reward over the last step's turns.", ["run"]
    ),
    "correct_rate": prometheus_client.Gauge(
        "drkernel_trainer_correct_rate", "Share of the last step's turns judged correct.", ["run"]
    ),
    "hacked_rate": prometheus_client.Gauge(
        "drkernel_trainer_hacked_rate", "Share of the last step's turns judged to hack the reward.", ["run"]
    ),
    "mrs_rejected_rate": prometheus_client.Gauge(
        "drkernel_trainer_mrs_rejected_rate",
        "Share of the last step's trajectories dropped by mismatch rejection sampling.",
        ["run"],
    ),
    "prs_rejected_rate": prometheus_client.Gauge(
        "drkernel_trainer_prs_rejected_rate",
        "Share rejected by profiling-based rejection sampling in the last step.",
        ["run"],
    ),
    "veto_rate": prometheus_client.Gauge(
        "drkernel_trainer_veto_rate", "Share vetoed by a token's tiny probability ratio in the last step.", ["run"]
    ),
    "logprob_mismatch": prometheus_client.Gauge(
        "drkernel_trainer_logprob_mismatch",
        "Distance between learner and sampler log-probs in the last step.",
        ["run"],
    ),
    "weights_version": prometheus_client.Gauge(
        "drkernel_trainer_weights_version", "Weights version pushed to the policy by the last step.", ["run"]
    ),
    "seconds_step": prometheus_client.Gauge(
        "drkernel_trainer_step_seconds", "Wall-clock seconds of the last step.", ["run"]
    ),
}
PHASE_SECONDS = prometheus_client.Gauge(
    "drkernel_trainer_phase_seconds",
    "Seconds the last step spent per phase (generating and evaluating are summed over turns).",
    ["run", "phase"],
)
EXTRA = prometheus_client.Gauge(
    "drkernel_trainer_step_extra", "Other numeric keys of the last step's metrics line.", ["run", "key"]
)
PHASES = ("generating", "evaluating", "logprobs", "updating", "syncing")
_PHASE_KEYS = {f"seconds_{phase}": phase for phase in PHASES}


def record_step(run: str, metrics: Mapping[str, float]) -> None:
    """Sets the gauges of ``run`` from one step's metrics; values that are not numbers (or are
    booleans) are skipped, so a whole metrics.jsonl object may be passed as it is."""
    for key, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        number = float(value)
        if key in _GAUGES:
            _GAUGES[key].labels(run).set(number)
        elif key in _PHASE_KEYS:
            PHASE_SECONDS.labels(run, _PHASE_KEYS[key]).set(number)
        else:
            EXTRA.labels(run, key).set(number)


@contextmanager
def active_run(run: str) -> Iterator[Callable[[Mapping[str, float]], None]]:
    """Counts a run that this process trains itself as started, and as active while the block
    runs (the trainer service counts the runs it supervises, in their own processes); yields
    the function that records each of its steps under the label ``run``."""
    RUNS_STARTED.inc()
    RUNS_ACTIVE.inc()
    try:
        yield partial(record_step, run)
    finally:
        RUNS_ACTIVE.dec()
