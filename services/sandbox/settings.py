"""The sandbox service's settings: the ``sandbox`` section of the root configuration
(``drkernel.config``), set in YAML under ``sandbox:`` or as ``DRKERNEL_SANDBOX__...``.

Only pydantic and ``drkernel.sections`` are imported here: the root configuration imports this
module, and the trainer reads the reward settings, without pulling in the sandbox itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from drkernel.sections import Section, ServerSettings


class Tolerance(Section):
    """Closeness demanded of one output dtype.

    Every element must satisfy ``|c - r| <= atol + rtol * |r|`` (torch.allclose) and the
    whole output ``||c - r|| / ||r|| <= max_rel_l2``. The norm bound is what rejects
    precision downgrades that a loose elementwise tolerance would let through.
    """

    atol: float = Field(gt=0)
    rtol: float = Field(ge=0)
    max_rel_l2: float = Field(gt=0)


def _default_tolerances() -> dict[str, Tolerance]:
    return {
        # Triton's default (truncating) TF32 dot lands near 8e-4 relative L2, up to 1.04e-3
        # measured on an H100; products of bf16-rounded operands land near 2.3e-3, and
        # bf16-rounded outputs near 1.7e-3 (docs/EVALUATION.md).
        "float32": Tolerance(atol=1e-2, rtol=1e-2, max_rel_l2=1.5e-3),
        "float64": Tolerance(atol=1e-6, rtol=1e-6, max_rel_l2=1e-8),
        "float16": Tolerance(atol=1e-2, rtol=1e-2, max_rel_l2=5e-3),
        "bfloat16": Tolerance(atol=2e-2, rtol=2e-2, max_rel_l2=2e-2),
    }


VariantName = Literal["original", "seed", "scaled", "resized", "dtype"]
StageName = Literal["syntax", "load", "compile", "tiny_run", "correctness"]


class CorrectnessSettings(Section):
    """Multi-input correctness (docs/EVALUATION.md)."""

    variants: tuple[VariantName, ...] = Field(
        ("original", "seed", "scaled", "resized", "dtype"),
        description="Input variants every candidate must pass, in order.",
    )
    scale: float = Field(2.0, gt=0, description="Factor applied to float inputs (scaled).")
    dtype_cuda: Literal["float16", "bfloat16"] = Field(
        "bfloat16", description="Other dtype tried on GPU (dtype variant)."
    )
    dtype_cpu: Literal["float16", "bfloat16"] = Field(
        "float16", description="Other dtype tried on CPU; the interpreter mishandles bfloat16."
    )
    tolerances: dict[str, Tolerance] = Field(default_factory=_default_tolerances, description="Per output dtype.")
    size_constant_min: int = Field(
        8, ge=2, description="Module-level integers at least this large are treated as sizes."
    )
    tiny_size: int = Field(4, ge=1, description="Sizes are capped at this in the tiny run (raised if the task needs).")
    variant_memory_share: float = Field(
        0.15,
        gt=0,
        le=1,
        description=(
            "Variants other than the task's own inputs plan with at most this share of the device's "
            "memory and are shrunk to fit (said in their description; profiles that never shrink "
            "are exempt): a full-size KernelBench call needs tens of GiB, and other values, sizes "
            "and dtypes are checked as well at a fraction of those sizes in a fraction of the time "
            "(odd sizes stay odd)."
        ),
    )
    stop_at_first_failure: bool = Field(True, description="Stop checking variants after the first failure.")
    device_init_min_elements: int = Field(
        2**24,
        ge=0,
        description=(
            "On a GPU, models whose parameters and buffers hold at least this many elements are "
            "built with the GPU as the default device (weights drawn there, the same way for the "
            "reference and ModelNew) instead of on the host, where drawing them is slow."
        ),
    )
    late_write_wait_seconds: float = Field(
        0.05,
        ge=0,
        description=(
            "Outputs are re-read this long after forward returned at the earliest, to catch writes "
            "after return (the harness's own bookkeeping since the return counts toward it)."
        ),
    )
    default_profile: Literal["strict", "kernelgym", "kernelbench"] = Field(
        "strict",
        description=(
            "Correctness profile of requests that name none: strict (the checks above), kernelgym "
            "(five fresh seeds, atol=rtol=1e-2) or kernelbench (the task's own inputs and dtype, "
            "1e-4 for float32, 1e-2 for half precision); docs/EVALUATION.md."
        ),
    )


class TimingSettings(Section):
    """Calibrated GPU timing (docs/EVALUATION.md)."""

    warmup_trials: int = Field(10, ge=0, description="Untimed runs per model first.")
    trials: int = Field(50, ge=3, description="Timed runs per model, interleaved (the most).")
    min_trials: int = Field(
        10, ge=3, description="Timed runs per model before timing may stop early (see median_precision)."
    )
    median_precision: float = Field(
        0.002,
        ge=0,
        description=(
            "Timing stops once the standard error of both models' median, relative to the median, is "
            "below this (1.253 * stdev / sqrt(n) / median); 0 always runs every trial."
        ),
    )
    cpu_trials: int = Field(3, ge=1, description="Timed runs on CPU, where timing is reported but never valid.")
    trim_fraction: float = Field(0.1, ge=0, lt=0.5, description="Share cut from each end for the trimmed mean.")
    min_trial_us: float = Field(
        1000.0,
        gt=0,
        description=(
            "Launch-bound models run several calls (each on fresh inputs) per timed trial, "
            "enough to fill this many microseconds; times are reported per call."
        ),
    )
    max_calls_per_trial: int = Field(100, ge=1, le=1024, description="Cap on calls per trial.")
    graph_min_trial_us: float = Field(
        2000.0,
        gt=0,
        description=(
            "A trial replayed from a CUDA graph holds enough calls for this much device time (the "
            "graph is captured again with more calls if the first is shorter)."
        ),
    )
    max_graph_calls: int = Field(
        64, ge=1, le=1024, description="Cap on the calls captured in one CUDA graph (each has its own inputs)."
    )
    long_call_us: float = Field(
        1000.0, gt=0, description="Calls longer than this need only three warm-up trials, not warmup_trials."
    )
    l2_flush_bytes: int = Field(256 * 2**20, ge=0, description="Bytes written before every trial to flush L2.")
    side_stream_slack_us: float = Field(
        20.0,
        ge=0,
        description=(
            "How long (median over trials) device work a candidate started may keep running after "
            "its forward calls finished on the timed stream before it is judged to hide work on "
            "another stream."
        ),
    )
    cuda_graphs: bool = Field(
        True,
        description=(
            "Time launch-bound models (several calls per trial) by replaying their calls captured as "
            "one CUDA graph, when both models can be captured; eager calls otherwise."
        ),
    )
    recheck_speedup_above: float = Field(
        3.0, gt=0, description="A speedup above this is measured once more; the lower counts."
    )
    alone_warmup_seconds: float = Field(
        0.2,
        ge=0,
        description=(
            "Untimed trials (two at least) for this long before each model is timed alone, so that "
            "the device has left the idle state the gap before it let it fall into; not for trials "
            "longer than long_call_us, two of which do that."
        ),
    )


def _default_stage_credit() -> dict[StageName, float]:
    return {"syntax": 0.0, "load": 0.1, "compile": 0.3, "tiny_run": 0.5, "correctness": 0.7}


class RewardSettings(Section):
    """The reward function (services/sandbox/reward.py, docs/EVALUATION.md)."""

    correct_weight: float = Field(0.5, ge=0, description="Reward for being correct.")
    speedup_weight: float = Field(0.5, ge=0, description="Weight of min(speedup, cap).")
    speedup_cap: float = Field(3.0, gt=0, description="Speedup beyond this earns nothing more.")
    coverage_weight: float = Field(
        0.5,
        ge=0,
        description="Weight of coverage (the PR term: share of device time in own kernels), correct kernels only.",
    )
    staged_partial_credit: bool = Field(
        False, description="Give failed (non-hacked) candidates credit for the stages passed."
    )
    stage_credit: dict[StageName, float] = Field(
        default_factory=_default_stage_credit,
        description="Share of correct_weight granted for the furthest stage passed.",
    )


class IsolationSettings(Section):
    """How candidate processes are confined (docs/SECURITY.md)."""

    mode: Literal["auto", "bubblewrap", "none"] = Field(
        "auto",
        description=(
            "bubblewrap: namespaces, required; none: subprocess and rlimits only; "
            "auto: bubblewrap when installed, else none with a loud warning."
        ),
    )
    uid_base: int = Field(
        61000,
        ge=1000,
        description=(
            "When run as root, each worker drops its judge and each of its candidate processes (warm_candidates + 2, "
            "in turn) to uids of "
            "[uid_base, uid_base + uid_count) that no other sandbox server on the host holds."
        ),
    )
    uid_count: int = Field(4096, ge=2, description="How many uids from uid_base the workers may claim.")
    uid_lock_dir: Path = Field(
        Path("/tmp/drkernel-uids"),
        description=(
            "Where workers lock the uids they hold (services/sandbox/server/uids.py). It must be "
            "the same directory for every sandbox server on the host: in Kubernetes, a hostPath."
        ),
    )
    seccomp: bool = Field(True, description="Install the seccomp filter in candidates.")
    memory_bytes: int = Field(8 * 2**30, gt=0, description="Address-space limit of a CPU candidate process.")
    judge_memory_bytes: int = Field(
        24 * 2**30,
        gt=0,
        description=(
            "Address-space limit (RLIMIT_AS) of a CPU worker's judge process. It holds the "
            "reference outputs it caches (sandbox.reference_cache_bytes), runs the reference on "
            "what a candidate gets (memory_bytes) and holds the candidate's outputs (no more than "
            "the reference's): the default is their sum. Not applied to GPU judges: the CUDA "
            "driver reserves address space far beyond the memory it uses, so any such limit "
            "breaks it."
        ),
    )
    cpu_seconds: int = Field(600, gt=0, description="CPU-time limit of a candidate process.")
    max_processes: int = Field(512, gt=0, description="Processes and threads of the sandbox user (RLIMIT_NPROC).")
    max_open_files: int = Field(1024, gt=0, description="Open file descriptors.")
    max_file_bytes: int = Field(512 * 2**20, gt=0, description="Largest file it may write.")
    max_stderr_bytes: int = Field(
        64 * 2**10, gt=0, description="Candidate output kept for error messages; rest dropped."
    )


class SandboxSettings(Section):
    """The sandbox service (services/sandbox)."""

    server: ServerSettings = ServerSettings(port=50051, metrics_port=9101)
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="Default device: cuda when a GPU is visible (auto), else cpu."
    )
    cpu_workers: int = Field(2, ge=1, description="Concurrent CPU evaluations.")
    warm_candidates: int | None = Field(
        None,
        ge=0,
        description=(
            "Candidate processes each worker keeps started and waiting (each is used once); unset: "
            "3 for a CPU worker, 5 for a GPU worker. Enough of them hide process start-up behind "
            "evaluations: a used one is replaced when its evaluation ends, so back to back a new one "
            "has the time of (this - 1) evaluations to start, and a GPU candidate takes about 12 s "
            "(imports, CUPTI, the CUDA context) where a full-size evaluation takes 4-5 s. 0 starts "
            "one per evaluation, when it comes (a one-off local evaluation, where a spare would only "
            "compete for the cores)."
        ),
    )
    warm_cuda: bool = Field(
        True,
        description=(
            "Warm GPU candidate processes create their CUDA context and start CUPTI while they wait "
            "(about 5-7 s saved per evaluation on an H100); they then do so while another evaluation "
            "may be running on the same GPU."
        ),
    )
    queue_capacity: int = Field(256, ge=1, description="Requests that may wait for a worker before refusals.")
    retry_pushback_ms: int = Field(500, ge=0, description="Retry hint sent with RESOURCE_EXHAUSTED.")
    expected_evaluation_seconds: float = Field(
        5.0,
        gt=0,
        description=(
            "Evaluation time the retry hint assumes until evaluations have been timed (the hint then "
            "follows a moving average of the real ones)."
        ),
    )
    default_timeout_seconds: float = Field(180.0, gt=0, description="Per evaluation.")
    max_timeout_seconds: float = Field(1800.0, gt=0, description="Cap on requested timeouts.")
    max_source_bytes: int = Field(512 * 2**10, gt=0, description="Largest reference or candidate source accepted.")
    seed: int = Field(42, ge=0, description="Default base seed.")
    max_output_bytes: int = Field(
        32 * 2**30, gt=0, description="Largest total output a candidate may hand back per run."
    )
    judge_max_evaluations: int = Field(
        200, ge=1, description="A judge process is replaced after this many evaluations."
    )
    reference_cache_bytes: int = Field(8 * 2**30, ge=0, description="Reference outputs kept per judge for reuse.")
    device_memory_bytes: int | None = Field(
        None,
        gt=0,
        description=(
            "Device memory the judge plans with (services/sandbox/memory.py); unset reads the free "
            "memory of the GPU. Set it to share a GPU with other work, or to try the planner on CPU."
        ),
    )
    work_dir: Path = Field(Path("/tmp/drkernel"), description="Scratch space and compile caches of workers.")
    kernel_cache_bytes: int = Field(
        2**30,
        ge=0,
        description=(
            "Disk space for compiled Triton kernels kept (in work_dir/triton-cache) for the next "
            "evaluation of the same candidate source; least recently used go first; 0 keeps none."
        ),
    )
    kernel_cache_entry_bytes: int = Field(
        64 * 2**20,
        ge=0,
        description="A candidate whose compiled kernels take more than this keeps none of them.",
    )
    correctness: CorrectnessSettings = CorrectnessSettings()
    timing: TimingSettings = TimingSettings()
    reward: RewardSettings = RewardSettings()
    isolation: IsolationSettings = IsolationSettings()

    def spare_candidates(self, kind: str) -> int:
        """How many warm candidates a worker of ``kind`` ("cpu" or "cuda") keeps."""
        if self.warm_candidates is not None:
            return self.warm_candidates
        return 5 if kind == "cuda" else 3

    @model_validator(mode="after")
    def _timeouts_ordered(self) -> SandboxSettings:
        if self.default_timeout_seconds > self.max_timeout_seconds:
            raise ValueError("sandbox.default_timeout_seconds must not exceed sandbox.max_timeout_seconds")
        return self
