"""The trainer service's settings: the ``trainer`` section of the root configuration
(``drkernel.config``), set in YAML under ``trainer:`` or as ``DRKERNEL_TRAINER__...``. What one
training run does is its run config (``run_config.py``), not these; ``trainer.bench`` holds the
defaults of ``drkernel bench`` (its flags override them).

Only pydantic and ``drkernel.sections`` are imported here, so the root configuration loads
without torch or the training loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from drkernel.sections import Section, ServerSettings


class BenchSettings(Section):
    """``drkernel bench`` (services/trainer/bench): how generations are sampled and judged."""

    correctness_profile: Literal["strict", "kernelgym", "kernelbench"] = Field(
        "strict", description="The judge's correctness profile for every evaluation (docs/EVALUATION.md)."
    )
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="Where candidates run; auto: the sandbox's.")
    seed: int = Field(
        0, ge=0, description="Seeds every evaluation's weights and inputs, the baselines and the policy's sampling."
    )
    samples: int = Field(1, ge=1, description="Samples per task (N) when a policy writes the kernels.")
    turns: int = Field(1, ge=1, description="Refinement turns per sample (T), each with the judge's feedback.")
    history_turns: int = Field(
        4, ge=0, description="Earlier turns a prompt keeps (k): the contiguous window of highest summed reward."
    )
    temperature: float = Field(1.0, gt=0, description="The policy's sampling temperature.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus mass; 1 is off.")
    max_tokens: int = Field(4096, ge=1, description="Most tokens per completion.")
    evaluation_timeout_seconds: float = Field(300.0, gt=0, description="Limit of one evaluation in the sandbox.")
    evaluation_concurrency: int = Field(8, ge=1, description="Evaluations in flight at once, over every sandbox.")
    generation_concurrency: int = Field(
        64,
        ge=1,
        description=(
            "Generate requests in flight at once; later turns send one request per sample, so this "
            "bounds the rows the policy can batch (policy.transformers.max_batch_size, default 64)."
        ),
    )
    sandboxes: tuple[str, ...] = Field(
        (),
        description=(
            "Sandbox servers: host:port each (work goes to the least busy), or one gRPC target such as "
            "dns:///sandbox:50051 (round robin over what it resolves to); empty: one started on loopback."
        ),
    )
    local_sandbox_workers: int = Field(2, ge=1, description="CPU workers of a sandbox started on loopback.")
    policy: str | None = Field(None, description="host:port of a PolicyService; None: the embedded model, served here.")
    model: Path | None = Field(None, description="Model directory served when no policy is given; None: embedded.")
    baselines: Literal["auto", "on", "off"] = Field(
        "auto",
        description=(
            "Time eager PyTorch and torch.compile of each reference after judging: auto does on a GPU "
            "(never on CPU, where no speedup is valid), on always, off never."
        ),
    )
    baseline_warmups: int = Field(5, ge=1, description="Untimed calls of each baseline first.")
    baseline_trials: int = Field(20, ge=3, description="Timed trials of each baseline, interleaved.")
    baseline_timeout_seconds: float = Field(
        900.0, gt=0, description="Limit of one task's baselines (torch.compile included)."
    )

    @model_validator(mode="after")
    def _one_target_or_addresses(self) -> BenchSettings:
        targets = [s for s in self.sandboxes if ":///" in s or s.startswith(("ipv4:", "ipv6:"))]
        if targets and len(self.sandboxes) > 1:
            raise ValueError("a balanced gRPC target (dns:///..., ipv4:...) must be the only sandbox named")
        return self


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
    bench: BenchSettings = BenchSettings()
