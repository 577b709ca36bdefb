"""The trainer service's settings: the ``trainer`` section of the root configuration
(``drkernel.config``), set in YAML under ``trainer:`` or as ``DRKERNEL_TRAINER__...``. What one
training run does is its run config (``run_config.py``), not these.

Only pydantic and ``drkernel.sections`` are imported here, so the root configuration loads
without torch or the training loop.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from drkernel.sections import Section, ServerSettings


class TrainerSettings(Section):
    """The trainer service (services/trainer): starts, watches and stops training runs, each a
    ``drkernel train`` process with its own directory under runs_dir."""

    server: ServerSettings = ServerSettings(port=50054, metrics_port=9104)
    runs_dir: Path = Field(
        Path("runs"),
        description=(
            "Where each run gets its directory (config, metrics.jsonl, checkpoints, logs); relative "
            "paths start at the server's working directory. Share it with the policy service (same "
            "path) for weight sync through files and for serving checkpoints."
        ),
    )
    max_concurrent_runs: int = Field(
        1, ge=1, description="Runs pending or running at once; StartRun beyond this is refused."
    )
    nproc_per_node: int = Field(
        1,
        ge=1,
        description=(
            "Processes per run: 1 runs the job as plain python; more run it under torchrun "
            "--standalone (one learner rank per GPU)."
        ),
    )
    stop_grace_seconds: float = Field(
        600.0,
        gt=0,
        description=(
            "After SIGTERM a run finishes or abandons its step and checkpoints; it and every process "
            "it started are killed if it has not exited after this long."
        ),
    )
    python: Path | None = Field(
        None, description="Interpreter that runs the job (and torchrun); unset: the server's own."
    )
    train_args: tuple[str, ...] = Field(
        ("-m", "drkernel", "train"),
        description=(
            "The interpreter's arguments that start the training job (a module or a script and its "
            "first arguments); the server appends --config/--resume, --out and --steps."
        ),
    )
    poll_seconds: float = Field(1.0, gt=0, description="How often each run's process and metrics.jsonl are checked.")
