"""`drkernel train`, `drkernel sft`, `drkernel best-of-n`, `drkernel report` and `drkernel
serve trainer`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from drkernel.cli import EXIT_OK, CliError, load_settings_for, with_cli_ports


def register(commands: Any, serve_commands: Any) -> None:
    train = commands.add_parser(
        "train",
        help="Run (or resume) RL training of the policy against the sandbox.",
        description=(
            "Multi-turn rollouts, TRLOO advantages, MRS/PRS rejection and policy updates, as one "
            "YAML (services/trainer/configs/). Under torchrun every rank learns; rank 0 also runs "
            "the rollouts. Writes OUT/config.yaml, OUT/metrics.jsonl and OUT/checkpoints/step_N/."
        ),
    )
    source = train.add_mutually_exclusive_group(required=True)
    source.add_argument("--config", dest="run_config", type=Path, help="The run's YAML file.")
    source.add_argument("--resume", type=Path, metavar="OUT", help="Resume the run in OUT from its last checkpoint.")
    train.add_argument("--out", type=Path, help="Run directory (required with --config).")
    train.add_argument(
        "--auto-resume",
        action="store_true",
        help=(
            "With --config: resume OUT from its last complete checkpoint if it has one (with the "
            "run's own OUT/config.yaml), else start fresh from --config; for jobs that restart."
        ),
    )
    train.add_argument(
        "--metrics-port",
        type=int,
        help="Serve Prometheus /metrics on this port (local rank 0 of each node; rank 0 sets the step gauges).",
    )
    train.add_argument("--steps", type=int, help="Total steps to reach (overrides the config's steps).")
    train.add_argument("--plot", action="store_true", help="Draw the curves and print the table at the end.")
    train.set_defaults(handler=run_train)

    sft = commands.add_parser("sft", help="Supervised fine-tuning (LoRA r=16 by default) on (task, solution) JSONL.")
    sft.add_argument(
        "--data", type=Path, help="JSONL of {task, reference, solution}; default: built-in solutions and families."
    )
    sft.add_argument("--out", type=Path, required=True, help="Output directory (a model the policy service loads).")
    sft.add_argument("--model", type=Path, help="Base model directory (default: the embedded one).")
    sft.add_argument(
        "--exclude", action="append", default=[], help="Task name kept out of the default data; repeatable."
    )
    sft.add_argument("--settings", type=Path, help="YAML of SftSettings (epochs, lr, lora, ...).")
    sft.set_defaults(handler=run_sft)

    best = commands.add_parser("best-of-n", help="Sample N per task, keep the top K correct as SFT data.")
    best.add_argument(
        "--config", dest="run_config", type=Path, required=True, help="Run YAML naming the tasks and services."
    )
    best.add_argument("--out", type=Path, required=True, help="JSONL file to write.")
    best.add_argument("--n", type=int, default=10, help="Samples per task (default 10).")
    best.add_argument("--k", type=int, default=3, help="Correct samples kept per task (default 3).")
    best.set_defaults(handler=run_best_of_n)

    report = commands.add_parser("report", help="Curves (PNG) and a table from a run directory.")
    report.add_argument("run_dir", type=Path, help="The run's OUT directory.")
    report.set_defaults(handler=run_report)

    serve = serve_commands.add_parser("trainer", help="Run the TrainerService gRPC server.")
    serve.add_argument("--port", type=int, help="gRPC port (default from settings: 50054).")
    serve.add_argument("--metrics-port", type=int, help="Prometheus port (default from settings: 9104).")
    serve.set_defaults(handler=run_serve)


def _positive(value: int | None, flag: str) -> None:
    if value is not None and value < 1:
        raise CliError(f"{flag} must be at least 1, got {value}")


def run_train(args: argparse.Namespace) -> int:
    from services.trainer.loop import train
    from services.trainer.report import METRICS_FILE
    from services.trainer.run_config import load_run_config

    _positive(args.steps, "--steps")
    if args.metrics_port is not None and not 1 <= args.metrics_port <= 65535:
        raise CliError(f"--metrics-port must be a port number (1-65535), got {args.metrics_port}")
    load_settings_for(args)
    if args.resume is not None:
        out = args.resume
        if args.out is not None and args.out != out:
            raise CliError("--out is the run directory given to --resume; give one or the other")
        if args.auto_resume:
            raise CliError("--auto-resume goes with --config and --out (--resume always resumes)")
        resume = True
    else:
        if args.out is None:
            raise CliError("--out is required with --config")
        out = args.out
        if args.auto_resume:
            resume = _auto_resume(out, args.run_config)
        elif (out / METRICS_FILE).exists():
            raise CliError(f"{out} already holds a run; resume it with --resume {out} or choose another --out")
        else:
            resume = False
    config = load_run_config(out / "config.yaml" if resume else args.run_config)
    if args.steps is not None:
        config = config.model_copy(update={"steps": args.steps})
    done = train(config, out, resume=resume, progress=sys.stderr.isatty(), metrics_port=args.metrics_port)
    if args.plot:
        _report(out)
    print(f"trained to step {done}; run in {out}")
    return EXIT_OK


def _auto_resume(out: Path, run_config: Path) -> bool:
    """Whether ``--auto-resume`` resumes ``out`` (it has a complete checkpoint) or starts it
    fresh from ``run_config``; says which on stdout."""
    from services.trainer.checkpoint import latest_checkpoint
    from services.trainer.loop import DISCARDED_METRICS_FILE
    from services.trainer.report import METRICS_FILE

    checkpoint = latest_checkpoint(out / "checkpoints")
    if checkpoint is not None:
        print(f"auto-resume: resuming {out} from its checkpoint {checkpoint.name} (with {out / 'config.yaml'})")
        return True
    if (out / METRICS_FILE).exists():
        print(
            f"auto-resume: {out} has records but no complete checkpoint; starting fresh from {run_config} "
            f"(the earlier records go to {DISCARDED_METRICS_FILE})"
        )
    else:
        print(f"auto-resume: no checkpoint in {out}; starting fresh from {run_config}")
    return False


def _report(run_dir: Path) -> None:
    from services.trainer.report import read_metrics, summary_table, write_report

    for path in write_report(run_dir):
        print(f"wrote {path}")
    print(summary_table(read_metrics(run_dir / "metrics.jsonl")))


def run_report(args: argparse.Namespace) -> int:
    load_settings_for(args)
    if not (args.run_dir / "metrics.jsonl").is_file():
        raise CliError(f"no metrics.jsonl in {args.run_dir}")
    _report(args.run_dir)
    return EXIT_OK


def run_sft(args: argparse.Namespace) -> int:
    import yaml

    from services.trainer.loop import resolve_model
    from services.trainer.run_config import RunConfig
    from services.trainer.sft import SftSettings, write_solution_data
    from services.trainer.sft import run_sft as sft

    load_settings_for(args)
    settings = (
        SftSettings.model_validate(yaml.safe_load(args.settings.read_text()) or {}) if args.settings else SftSettings()
    )
    data = args.data
    if data is None:
        data = args.out.parent / f"{args.out.name}.data.jsonl"
        count = write_solution_data(data, exclude=set(args.exclude))
        print(f"wrote {count} examples (built-in solutions and task families) to {data}")
    model_dir = resolve_model(RunConfig(model=args.model))
    result = sft(data, args.out, settings, model_dir, progress=sys.stderr.isatty())
    losses = ", ".join(f"{loss:.4f}" for loss in result.epoch_losses)
    print(
        f"fine-tuned on {result.examples} examples in {result.seconds:.0f} s; loss per epoch: {losses}; "
        f"model in {result.out_dir}"
    )
    return EXIT_OK


def run_best_of_n(args: argparse.Namespace) -> int:
    from services.trainer.best_of_n import SamplingSettings, best_of_n
    from services.trainer.loop import Services, resolve_model
    from services.trainer.run_config import load_run_config
    from services.trainer.task_sets import split_tasks

    _positive(args.n, "--n")
    _positive(args.k, "--k")
    load_settings_for(args)
    config = load_run_config(args.run_config)
    tasks, _ = split_tasks(config.tasks)
    model_dir = resolve_model(config)
    judged = config.model_copy(update={"environment": config.environment.model_copy(update={"kind": "sandbox"})})
    services = Services(judged, model_dir, "auto", config.dtype)
    try:
        assert services.sandbox is not None
        sampling = SamplingSettings.from_rollout(config.rollout, args.n, config.seed)
        result = services.loop.run(
            best_of_n(
                tasks,
                args.out,
                services.policy.address,
                services.sandbox.address,
                sampling,
                keep=args.k,
                reward=config.reward,
                progress=sys.stderr.isatty(),
                security=services.security,
            )
        )
    finally:
        services.close()
    print(
        f"kept {result.rows} correct samples of {len(tasks)} tasks ({result.tasks_with_rows} with any) in {result.path}"
    )
    return EXIT_OK


def run_serve(args: argparse.Namespace) -> int:
    import asyncio
    import os

    from drkernel.config import CONFIG_ENV_VAR
    from services.trainer.server import serve

    settings = load_settings_for(args, server=True)
    if args.config is not None:  # the runs it starts read the same settings (security, for one)
        os.environ[CONFIG_ENV_VAR] = str(args.config.resolve())
    server = with_cli_ports(settings.trainer.server, args)
    asyncio.run(serve(settings.model_copy(update={"trainer": settings.trainer.model_copy(update={"server": server})})))
    return EXIT_OK
