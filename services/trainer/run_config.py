"""One experiment, one YAML file: every extension is a switch here, so ablations need no code.

The file is validated as a whole (unknown keys are errors, so a typo never silently keeps a
default) and is written back, resolved, as ``OUT/config.yaml`` at the start of a run. Service
settings (ports, sandbox limits) stay in the root configuration (``drkernel.config``); this is
what one training run does. Defaults are the published Dr. Kernel recipe (docs:
../shared/notes/dr-kernel-facts.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from drkernel.errors import InvalidArgument
from drkernel.sections import Section
from services.sandbox.settings import RewardSettings

# Which earlier turns a prompt keeps (services/trainer/rollout.py, history_window).
HistoryWindow = Literal["last", "best_reward"]


class TaskSettings(Section):
    """Which tasks are trained on and which are held out."""

    source: Literal["builtin", "kernelbench", "families"] = Field(
        "builtin",
        description=(
            "builtin: the sandbox's built-in suite; kernelbench: problem files of a checkout "
            "(kernelbench_dir); families: the generated task families (services/trainer/families.py)."
        ),
    )
    train: tuple[str, ...] = Field(
        (), description="Task names to train on; empty: every task of the source not held out."
    )
    heldout: tuple[str, ...] = Field((), description="Task names never trained on (evaluation only).")
    kernelbench_dir: Path | None = Field(None, description="A KernelBench checkout (source kernelbench).")
    levels: tuple[int, ...] = Field((1, 2), description="KernelBench levels used (source kernelbench).")

    @model_validator(mode="after")
    def _disjoint(self) -> TaskSettings:
        overlap = set(self.train) & set(self.heldout)
        if overlap:
            raise ValueError(f"tasks both trained on and held out: {', '.join(sorted(overlap))}")
        return self


class EnvironmentSettings(Section):
    """What scores a completion. ``sandbox`` judges kernels; ``token_target`` scores the share
    of completion tokens in a target set, a cheap learnable reward that tests the training
    loop end to end (prime-rl's reverse-text test plays the same role)."""

    kind: Literal["sandbox", "token_target"] = "sandbox"
    target_token_ids: tuple[int, ...] = Field((), description="token_target: the token ids that earn reward.")


class RolloutSettings(Section):
    """Multi-turn sampling (Dr. Kernel: 16 samples x 3 turns, 16 tasks per step)."""

    tasks_per_step: int = Field(16, ge=1, description="Tasks (groups) in one rollout batch.")
    samples_per_task: int = Field(16, ge=1, description="Trajectories per task (the group size n).")
    turns: int = Field(3, ge=1, description="Turns per trajectory (T).")
    max_tokens: int = Field(1024, ge=1, description="Most tokens per completion.")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature; the learner scores at the same.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus mass; 1 is off (MRS assumes the full distribution).")
    history_turns: int = Field(
        4, ge=0, description="Earlier turns (code and feedback) kept in each prompt; the others are dropped."
    )
    history_window: HistoryWindow = Field(
        "last",
        description=(
            "Which history_turns earlier turns a prompt keeps: the last ones, or the contiguous window "
            "with the highest summed reward (Dr. Kernel's sequential test-time scaling; the latest such "
            "window on ties). The two agree while a trajectory has at most history_turns earlier turns."
        ),
    )
    generation_concurrency: int = Field(
        64,
        ge=1,
        description=(
            "Generate requests in flight at once; later turns send one request per sample, so this "
            "bounds the rows the policy can batch (policy.transformers.max_batch_size, default 64)."
        ),
    )
    evaluation_concurrency: int = Field(8, ge=1, description="Sandbox evaluations in flight at once.")
    evaluation_timeout_seconds: float = Field(300.0, gt=0, description="Per sandbox evaluation (KernelGym RL: 300 s).")
    correctness_profile: Literal["strict", "kernelgym", "kernelbench"] = Field(
        "strict", description="The sandbox's correctness profile for every evaluation."
    )
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="Where candidates run.")
    skip_timing: bool = Field(False, description="Correctness only (CPU demos); speedup then counts 0.")
    evaluation_seed: int | None = Field(
        None, ge=0, description="Base seed of every evaluation's weights and inputs; None: the sandbox's default."
    )


class AdvantageSettings(Section):
    """Returns, the estimator and KernelGym's masking rules."""

    estimator: Literal["trloo", "grpo", "grpo_no_std", "rloo"] = Field(
        "trloo",
        description=(
            "trloo: turn-level leave-one-out over (task, turn) groups (Dr. Kernel); grpo: group-"
            "normalised with std; grpo_no_std: mean-centred only; rloo: trajectory-level "
            "leave-one-out on the first turn's return, broadcast to every turn."
        ),
    )
    gamma: float = Field(1.0, ge=0, le=1, description="Discount of later turns' rewards in returns.")
    void_after_positive: bool = Field(
        True, description="Mask a zero-reward turn that follows an earlier positive turn."
    )
    mask_failed_trajectories: bool = Field(
        True, description="An environment error or time-out masks the whole trajectory."
    )
    min_group_std: float = Field(
        1e-3, ge=0, description="Groups whose rewards vary less than this teach nothing and are masked."
    )


class MrsSettings(Section):
    """Mismatch rejection sampling between the policy server's and the learner's log-probs."""

    enabled: bool = True
    lower: float = Field(0.999, gt=0, description="Keep a trajectory only if its ratio is at least this.")
    upper: float = Field(1.001, gt=0, description="... and at most this.")
    veto_ratio: float = Field(1e-4, ge=0, description="A token whose ratio is below this vetoes its turn.")
    log_clamp: float = Field(20.0, gt=0, description="Clamp of the mean log-ratio before exp.")

    @model_validator(mode="after")
    def _ordered(self) -> MrsSettings:
        if self.lower > self.upper:
            raise ValueError("mrs.lower must not exceed mrs.upper")
        return self


class PrsSettings(Section):
    """Profiling-based rejection sampling (services/trainer/rejection.py)."""

    enabled: bool = True
    threshold: float = Field(0.3, ge=0, le=1, description="Coverage at which keeping starts.")
    factor: float = Field(0.1, gt=0, description="Coverage span over which keeping rises to 1.")


class LossSettings(Section):
    """PPO objective (Dr. Kernel: clip 0.2 / 0.28, dual clip 3, seq-mean-token-sum / 1000)."""

    clip_low: float = Field(0.2, ge=0)
    clip_high: float = Field(0.28, ge=0)
    dual_clip: float = Field(3.0, gt=1, description="Bound of the loss of negative-advantage tokens.")
    scale: float = Field(1e-3, gt=0, description="The sequence-summed loss is multiplied by this.")
    kl_coef: float = Field(
        0.0,
        ge=0,
        description="Weight of the k3 KL to the initial weights (a frozen copy, or LoRA's base); 0 is off.",
    )


class OptimSettings(Section):
    """AdamW and the update schedule."""

    lr: float = Field(1e-6, ge=0, description="Learning rate; 0 leaves the weights as they are (a control run).")
    weight_decay: float = Field(0.0, ge=0)
    betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: int = Field(0, ge=0, description="Linear warm-up of the learning rate.")
    grad_clip: float = Field(1.0, gt=0, description="Max global gradient norm.")
    micro_batch_rows: int = Field(4, ge=1, description="Rows per forward/backward on each rank.")
    updates_per_step: int = Field(
        1, ge=1, description="Optimizer steps per rollout batch (mini-batches); 1 is on-policy."
    )


class LoraSettings(Section):
    """LoRA (peft) instead of full fine-tuning."""

    enabled: bool = False
    rank: int = Field(16, ge=1)
    alpha: int = Field(32, ge=1)
    dropout: float = Field(0.0, ge=0, lt=1)
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class SyncSettings(Section):
    """How new weights reach the policy service after each step."""

    mode: Literal["shared_path", "grpc_stream"] = Field(
        "shared_path",
        description=(
            "shared_path: safetensors written under OUT/weights (a volume both can read) and "
            "UpdateWeights names the directory; grpc_stream: the tensors travel in the "
            "UpdateWeights stream."
        ),
    )
    max_off_policy_steps: int = Field(
        0,
        ge=0,
        description=(
            "A step fails if a completion came from weights more than this many steps old. The loop "
            "samples only after each sync, so runs are on-policy; overlapping rollouts with the "
            "update (off-policy steps) is not built yet."
        ),
    )
    keep_versions: int = Field(2, ge=1, description="Weight directories kept under OUT/weights.")


class CheckpointSettings(Section):
    every_steps: int = Field(10, ge=1, description="Checkpoint after every this many steps (and the last).")
    keep: int = Field(3, ge=1, description="Checkpoints kept; older ones are deleted.")
    export_hf: bool = Field(True, description="Also write a safetensors export the policy service can load.")


class CurriculumSettings(Section):
    """Beyond TritonRL's adaptive curriculum: p(level 2) = 0.1 + 0.4 * acc_L1 / 0.4 while
    acc_L1 < 0.4, else 0.5; tasks named ``l1_*`` / ``level1/*`` are level 1."""

    enabled: bool = False
    window_steps: int = Field(
        4, ge=1, description="acc_L1 is the mean level-1 correctness of the last this many steps."
    )


class ServiceAddresses(Section):
    """The services a run talks to; unset starts a local server on loopback (the embedded default)."""

    policy: str | None = Field(None, description="host:port of a PolicyService.")
    sandbox: str | None = Field(None, description="host:port of a SandboxService.")
    policy_backend: Literal["auto", "transformers", "vllm"] = Field(
        "transformers", description="Backend of a locally started policy server."
    )
    sandbox_workers: int = Field(2, ge=1, description="CPU workers of a locally started sandbox.")


class RunConfig(Section):
    """A training run."""

    name: str = Field("run", description="Shown in logs, metrics and the run's directory.")
    seed: int = Field(0, ge=0, description="Seeds task order, sampling, PRS draws and initial weights.")
    steps: int = Field(100, ge=1, description="Optimizer steps (rollout batches) to run.")
    model: Path | None = Field(None, description="HF model directory; unset: the embedded SmolLM2-135M.")
    dtype: Literal["auto", "float32", "bfloat16"] = Field(
        "auto",
        description=(
            "Compute precision of the learner (trained weights stay float32: an lr-1e-6 step is "
            "below bfloat16's resolution) and the served weights' dtype; auto is bfloat16 on GPUs "
            "and float32 on CPUs."
        ),
    )
    tasks: TaskSettings = TaskSettings()
    environment: EnvironmentSettings = EnvironmentSettings()
    rollout: RolloutSettings = RolloutSettings()
    reward: RewardSettings = RewardSettings()
    advantage: AdvantageSettings = AdvantageSettings()
    mrs: MrsSettings = MrsSettings()
    prs: PrsSettings = PrsSettings()
    loss: LossSettings = LossSettings()
    optim: OptimSettings = OptimSettings()
    lora: LoraSettings = LoraSettings()
    sync: SyncSettings = SyncSettings()
    checkpoint: CheckpointSettings = CheckpointSettings()
    curriculum: CurriculumSettings = CurriculumSettings()
    services: ServiceAddresses = ServiceAddresses()


def parse_run_config(text: str, where: str = "run config") -> RunConfig:
    """Validates YAML text; InvalidArgument names the first bad key and why."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        raise InvalidArgument(f"{where}: not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise InvalidArgument(f"{where}: expected a mapping at the top level")
    try:
        return RunConfig.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        path = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise InvalidArgument(f"{where}: {path}: {first['msg']}") from None


def load_run_config(path: Path) -> RunConfig:
    """Reads and validates a run config file."""
    return parse_run_config(path.read_text(), where=str(path))


def dump_run_config(config: RunConfig) -> str:
    """The config as YAML, every default written out (what ``OUT/config.yaml`` holds)."""
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
