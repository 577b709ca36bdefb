"""Does the trainer teach a real model to write kernels? SFT, then TRLOO RL, of a policy model on
the training split of the task families, with correctness and mean reward on a held-out split
measured before, after SFT and after RL (issue 9's GPU proof).

The held-out split is a set of whole operations (every shape of them): their solutions are kept
out of the SFT data and their tasks out of RL, so an improvement on them is transfer, not
recall. Each phase writes its result into ``OUT/results.json`` and is skipped when it is
already there, so the work can be split over several calls on one machine (``--stop-after``).

    python -m benchmarks.sft_rl_heldout --out DIR [--model DIR | --gguf FILE] [--quick]

The policy and the learner run on the GPU when there is one; the sandbox judges on the CPU cores
(Triton's interpreter, correctness and coverage, no timing), because a GPU sandbox judges one
candidate at a time per GPU and the rollouts need dozens per step.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from services.trainer.best_of_n import EvaluationReport, SamplingSettings, comparison_table, evaluate_policy
from services.trainer.families import family_tasks
from services.trainer.loop import Services, resolve_model
from services.trainer.run_config import RunConfig
from services.trainer.sft import SftSettings, run_sft, write_solution_data
from services.trainer.task_sets import split_tasks

# Whole operations held out: one of each kind the families have (elementwise, broadcast,
# reduction, normalisation).
HELDOUT_OPS = ("sigmoid", "hardswish", "mish", "softsign", "minimum", "min_dim", "l2norm", "log_softmax")
# Built-in tasks computing a held-out operation: out of the SFT data too.
HELDOUT_BUILTINS = ("l1_log_softmax",)
RESULTS = "results.json"


def op_of(task: str) -> str:
    """The operation of a family task name: ``fam_min_dim1_64x512`` -> ``min_dim``."""
    body = task.removeprefix("fam_")
    return next((op for op in HELDOUT_OPS if re.match(rf"{op}(_|\d)", body)), body)


def split() -> tuple[list[str], list[str], list[str]]:
    """(train tasks, held-out tasks evaluated, task names kept out of the SFT data)."""
    names = [t.name for t in family_tasks()]
    held = [n for n in names if op_of(n) in HELDOUT_OPS]
    evaluated: dict[str, str] = {}
    for name in held:  # one shape per held-out operation keeps the evaluation short
        evaluated.setdefault(op_of(name), name)
    train = [n for n in names if n not in held]
    return train, list(evaluated.values()), held + list(HELDOUT_BUILTINS)


def run_config(args: argparse.Namespace, model: Path, train: list[str], heldout: list[str]) -> RunConfig:
    """The RL run, and (through its tasks, rollout and services) the evaluations."""
    return RunConfig.model_validate(
        {
            "name": "sft-rl-heldout",
            "seed": 0,
            "steps": args.rl_steps,
            "model": str(model),
            "dtype": "float32",  # learner and policy compute alike, so MRS keeps what it should
            "tasks": {"source": "families", "train": train, "heldout": heldout},
            "rollout": {
                "tasks_per_step": args.tasks_per_step,
                "samples_per_task": args.samples,
                "turns": args.turns,
                "max_tokens": args.max_tokens,
                "temperature": 1.0,
                "history_turns": 1,
                "generation_concurrency": 64,
                "evaluation_concurrency": args.sandbox_workers,
                "evaluation_timeout_seconds": 120,
                "device": "cpu",
                "skip_timing": True,
            },
            "reward": {"staged_partial_credit": True},
            "optim": {"lr": args.rl_lr, "micro_batch_rows": 8},
            "checkpoint": {"every_steps": 1, "keep": 1},  # a call cut short resumes from here
            "services": {"sandbox_workers": args.sandbox_workers},
        }
    )


def evaluate(
    args: argparse.Namespace, model: Path, config: RunConfig, samples_out: Path, recall: int = 0
) -> dict[str, Any]:
    """Correctness and mean reward of ``model``'s samples on the held-out split (the requests
    batched by the policy server), every sample with the judge's feedback in ``samples_out``;
    with ``recall``, on that many training tasks instead, spread over the families (what
    SFT taught, not what transfers)."""
    train, heldout = split_tasks(config.tasks)
    if recall:
        heldout = train[:: max(1, len(train) // recall)][:recall]
    services = Services(config.model_copy(update={"model": model}), model, "auto", config.dtype)
    try:
        assert services.sandbox is not None
        settings = SamplingSettings(
            samples=args.eval_samples,
            temperature=0.7,
            max_tokens=args.max_tokens,
            device="cpu",
            skip_timing=True,
            evaluation_concurrency=args.sandbox_workers,
            evaluation_timeout_seconds=120,
        )
        report = services.loop.run(
            evaluate_policy(
                heldout,
                services.policy.address,
                services.sandbox.address,
                settings,
                config.reward,
                progress=False,
                security=services.security,
                samples_out=samples_out,
            )
        )
    finally:
        services.close()
    print(
        f"  correct {report.correct_rate:.1%}, reward {report.mean_reward:.3f}, solved {report.solved_rate:.1%}",
        flush=True,
    )
    return report.model_dump(mode="json")


def phase(out: Path, name: str, work: Callable[[], Any]) -> Any:
    """Runs ``work`` unless ``name`` is already in the results; stores what it returns."""
    path = out / RESULTS
    results = json.loads(path.read_text()) if path.exists() else {}
    if name in results:
        print(f"== {name}: done before", flush=True)
        return results[name]
    print(f"== {name}", flush=True)
    started = time.perf_counter()
    value = work()
    results[name] = value
    results.setdefault("seconds", {})[name] = round(time.perf_counter() - started, 1)
    path.write_text(json.dumps(results, indent=2) + "\n")
    return value


def base_model(args: argparse.Namespace, out: Path) -> Path:
    if args.model:
        return args.model
    if args.gguf:
        from services.policy.default_model import convert_gguf

        target = out / "base-model"
        if not (target / "config.json").is_file():
            convert_gguf(args.gguf, target)
        return target
    return resolve_model(RunConfig())


def sft(args: argparse.Namespace, out: Path, model: Path, excluded: list[str]) -> dict[str, Any]:
    data = out / "sft-data.jsonl"
    count = write_solution_data(data, exclude=excluded)
    if args.sft_examples:
        lines = data.read_text().splitlines(keepends=True)[: args.sft_examples]
        data.write_text("".join(lines))
        count = len(lines)
    settings = SftSettings(
        lora=False, lr=args.sft_lr, epochs=args.sft_epochs, warmup_steps=5, max_length=2048, dtype="float32"
    )
    result = run_sft(data, out / "sft-model", settings, model, progress=False)
    print(f"  {count} examples; loss per epoch {[round(x, 4) for x in result.epoch_losses]}", flush=True)
    return json.loads(result.model_dump_json())


def rl(out: Path, config: RunConfig) -> dict[str, Any]:
    """``drkernel train`` as a user runs it; returns where its exported model is."""
    config_path = out / "rl.yaml"
    config_path.write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
    run_dir = out / "rl"
    command = [sys.executable, "-m", "drkernel", "train", "--plot"]
    command += (
        ["--resume", str(run_dir)]
        if (run_dir / "checkpoints").exists()
        else ["--config", str(config_path), "--out", str(run_dir)]
    )
    subprocess.run(command, check=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    steps = sorted((run_dir / "checkpoints").glob("step_*"), key=lambda p: int(p.name.split("_")[1]))
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return {"model": str(steps[-1] / "hf"), "metrics": metrics}


def summary(out: Path) -> str:
    results = json.loads((out / RESULTS).read_text())
    lines = ["# SFT then RL, held-out split", "", f"{'model':<10} {'correct':>8} {'reward':>8} {'solved':>8}"]
    rows = [
        (name, EvaluationReport.model_validate(results[name]))
        for name in ("eval_base", "eval_sft", "eval_rl", "eval_sft_recall")
        if name in results
    ]
    lines += [f"{name[5:]:<10} {r.correct_rate:>8.1%} {r.mean_reward:>8.3f} {r.solved_rate:>8.1%}" for name, r in rows]
    heldout_rows = [row for row in rows if row[0] != "eval_sft_recall"]
    if len(heldout_rows) >= 2:
        first, last = heldout_rows[0], heldout_rows[-1]
        lines += ["", f"first vs last ({first[0]} -> {last[0]}):", comparison_table(first[1], last[1])]
    lines.append("")
    if "rl" in results:
        lines.append("RL steps (reward_mean, correct_rate, mrs_rejected_rate, logprob_mismatch, seconds_step):")
        lines += [
            f"  {m['step']:>3} {m['reward_mean']:.3f} {m['correct_rate']:.3f} {m['mrs_rejected_rate']:.3f} "
            f"{m['logprob_mismatch']:.2e} {m['seconds_step']:.0f}"
            for m in results["rl"]["metrics"]
        ]
    lines.append(f"seconds per phase: {results.get('seconds', {})}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--model", type=Path, help="Base model directory (default: the embedded one).")
    source.add_argument("--gguf", type=Path, help="Base model as the embedded package's GGUF file, converted here.")
    parser.add_argument("--stop-after", choices=("sft", "rl"), help="Stop after this phase (resume later).")
    parser.add_argument(
        "--skip-evaluation",
        action="append",
        choices=("base", "sft"),
        default=[],
        help="Leave out this evaluation (measured by an earlier run of the same recipe: a lease is short).",
    )
    parser.add_argument("--quick", action="store_true", help="Tiny sizes: checks the pipeline, proves nothing.")
    parser.add_argument("--rl-steps", type=int, help="RL steps (default 4; 1 with --quick).")
    parser.add_argument(
        "--recall-tasks",
        type=int,
        default=0,
        help="Also evaluate the SFT model on this many training tasks (recall of its data, not transfer).",
    )
    parser.add_argument("--sandbox-workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    args = parser.parse_args()
    sizes = (
        dict(
            sft_examples=4,
            sft_epochs=1,
            sft_lr=5e-5,
            eval_samples=2,
            max_tokens=64,
            rl_steps=1,
            rl_lr=1e-5,
            tasks_per_step=2,
            samples=2,
            turns=1,
        )
        if args.quick
        else dict(
            sft_examples=0,
            sft_epochs=4,
            sft_lr=5e-5,
            eval_samples=8,
            # the longest solution of a held-out operation is 1,029 tokens (log_softmax), of a
            # training task 1,152: a shorter limit makes them unsolvable by truncation
            max_tokens=1280,
            rl_steps=4,
            rl_lr=1e-5,
            tasks_per_step=4,
            samples=16,
            turns=1,
        )
    )
    for key, value in sizes.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    train, heldout, excluded = split()
    print(f"{len(train)} training tasks, held out: {', '.join(heldout)} ({len(excluded)} kept out of SFT)", flush=True)
    model = base_model(args, out)
    config = run_config(args, model, train, heldout)
    if "base" not in args.skip_evaluation:
        phase(out, "eval_base", lambda: evaluate(args, model, config, out / "samples_base.jsonl"))
    sft_model = Path(phase(out, "sft", lambda: sft(args, out, model, excluded))["out_dir"])
    if "sft" not in args.skip_evaluation:
        phase(out, "eval_sft", lambda: evaluate(args, sft_model, config, out / "samples_sft.jsonl"))
    if args.recall_tasks:
        samples_out = out / "samples_sft_recall.jsonl"
        phase(out, "eval_sft_recall", lambda: evaluate(args, sft_model, config, samples_out, args.recall_tasks))
    if args.stop_after != "sft":
        rl_config = config.model_copy(update={"model": sft_model})
        rl_model = Path(phase(out, "rl", lambda: rl(out, rl_config))["model"])
        phase(out, "eval_rl", lambda: evaluate(args, rl_model, config, out / "samples_rl.jsonl"))
    text = summary(out)
    (out / "summary.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
