"""`drkernel train`, `drkernel sft`, `drkernel best-of-n`, `drkernel bench`, `drkernel report`
and `drkernel serve trainer`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from drkernel.cli import EXIT_OK, EXIT_SERVER, CliError, load_settings_for, with_cli_ports


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

    _register_bench(commands)

    report = commands.add_parser(
        "report",
        help="A training run's curves and table, a benchmark's report redrawn, or two benchmarks compared.",
        usage="drkernel report RUN_DIR | drkernel report compare A B [--out DIR]",
        description=(
            "RUN_DIR: a training run (metrics.jsonl: curves in RUN_DIR/report/ and a table) or a benchmark's "
            "OUT (report.json: report.md and the plots drawn again). compare A B: two benchmark reports (OUT "
            "folders or report.json files) side by side, the difference B - A and compare.png."
        ),
    )
    report.add_argument("paths", nargs="+", metavar="PATH", help="RUN_DIR, or: compare A B.")
    report.add_argument("--out", type=Path, help="compare: the folder for compare.png (default: B's folder).")
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
    paths = args.paths
    if paths[0] == "compare" and len(paths) == 3:
        return _compare(Path(paths[1]), Path(paths[2]), args.out)
    if len(paths) != 1:
        raise CliError("usage: drkernel report RUN_DIR | drkernel report compare A B")
    run_dir = Path(paths[0])
    if (run_dir / "metrics.jsonl").is_file():
        _report(run_dir)
        return EXIT_OK
    if (run_dir / "report.json").is_file():
        from services.trainer.bench.report_files import write_all
        from services.trainer.bench.schema import read_report

        report = read_report(run_dir)
        for path in write_all(report, run_dir)[1:]:
            print(f"wrote {path}")
        print(_bench_summary(report))
        return EXIT_OK
    raise CliError(f"no metrics.jsonl (a training run) or report.json (a benchmark) in {run_dir}")


def _compare(a: Path, b: Path, out: Path | None) -> int:
    from services.trainer.bench.compare import comparison, comparison_plot
    from services.trainer.bench.schema import read_report

    first, second = read_report(a), read_report(b)
    folder = out or (b if b.is_dir() else b.parent)
    folder.mkdir(parents=True, exist_ok=True)
    print(comparison(first, second))
    print(f"wrote {comparison_plot(first, second, folder / 'compare.png')}")
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


def _register_bench(commands: Any) -> None:
    bench = commands.add_parser(
        "bench",
        help="Fast@p, correctness and hacking rates of a model's kernels over a task set.",
        description=(
            "Judges a generations file (JSONL of task, sample, turn, code; or a KernelBench runs/<name> "
            "folder) or a policy (a PolicyService, else the embedded model, sampling --samples x --turns with "
            "the judge's feedback) over a task set, times eager and torch.compile baselines on a GPU, and "
            "writes OUT/report.json, OUT/report.md and plots; OUT/cache.jsonl lets a rerun in the same OUT "
            "judge nothing twice. Defaults: the trainer.bench settings."
        ),
    )
    source = bench.add_mutually_exclusive_group()
    source.add_argument("--generations", type=Path, help="Generations JSONL, or a KernelBench run folder.")
    source.add_argument("--policy", help="HOST:PORT of a PolicyService (default: the embedded model, served here).")
    bench.add_argument("--model", type=Path, help="Model directory to serve when no --policy is given.")
    bench.add_argument(
        "--tasks",
        help="builtin, a KernelBench checkout or a folder of task files (default: builtin; with --generations, "
        "the tasks the file names).",
    )
    bench.add_argument("--levels", help="Comma-separated levels to keep, e.g. 1,2.")
    bench.add_argument("--problems", help="Comma-separated task ids (KernelBench: level2/12, or 12 with one level).")
    bench.add_argument("--out", type=Path, default=Path("runs/bench"), help="Output folder (default runs/bench).")
    bench.add_argument("--json", action="store_true", help="Print the summary as JSON on stdout.")
    bench.add_argument("--profile", choices=["strict", "kernelgym", "kernelbench"], help="Correctness profile.")
    bench.add_argument("--device", choices=["auto", "cpu", "cuda"], help="Where candidates run.")
    bench.add_argument("--seed", type=int, help="Seed of evaluations, baselines and sampling.")
    bench.add_argument("--samples", type=int, help="Policy: samples per task (N).")
    bench.add_argument("--turns", type=int, help="Policy: refinement turns (T).")
    bench.add_argument("--history-turns", type=int, help="Policy: earlier turns kept in a prompt (k, default 4).")
    bench.add_argument("--temperature", type=float, help="Policy: sampling temperature.")
    bench.add_argument("--max-tokens", type=int, help="Policy: most tokens per completion.")
    bench.add_argument(
        "--sandbox",
        action="append",
        help="A sandbox server (repeatable), or one gRPC target such as dns:///sandbox:50051; default: local.",
    )
    bench.add_argument("--concurrency", type=int, help="Evaluations in flight at once over all sandboxes.")
    bench.add_argument("--timeout", type=float, help="Seconds per evaluation.")
    bench.add_argument("--baselines", choices=["auto", "on", "off"], help="Time eager and torch.compile baselines.")
    bench.set_defaults(handler=run_bench)


def _integers(text: str | None, flag: str) -> list[int]:
    if not text:
        return []
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CliError(f"{flag} takes comma-separated integers, got {text!r}") from None


def _bench_settings(args: argparse.Namespace, defaults: Any) -> Any:
    from pydantic import ValidationError

    from services.trainer.settings import BenchSettings

    flags = {
        "correctness_profile": args.profile,
        "device": args.device,
        "seed": args.seed,
        "samples": args.samples,
        "turns": args.turns,
        "history_turns": args.history_turns,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "sandboxes": tuple(a.strip() for value in args.sandbox or () for a in value.split(",") if a.strip()) or None,
        "evaluation_concurrency": args.concurrency,
        "evaluation_timeout_seconds": args.timeout,
        "baselines": args.baselines,
        "policy": args.policy,
        "model": args.model,
    }
    given = {key: value for key, value in flags.items() if value is not None}
    try:
        return BenchSettings.model_validate({**defaults.model_dump(), **given})
    except ValidationError as error:
        first = error.errors()[0]
        flag = "--" + str(first["loc"][0]).replace("_", "-") if first["loc"] else "settings"
        raise CliError(f"{flag}: {first['msg']}") from None


def _bench_summary(report: Any) -> str:
    from services.trainer.bench.markdown import pct, times
    from services.trainer.bench.metrics import THRESHOLDS

    s = report.summary
    fast = "  ".join(f"Fast@{p} {pct(s.fast_p[p])}" for p in THRESHOLDS)
    lines = [
        f"{s.tasks} tasks, {s.generations} generations; judge {s.device}, "
        f"profile {s.correctness_profile}, seed {s.seed}",
        f"vs eager:         {fast}  geomean {times(s.geomean_speedup)}",
    ]
    if s.fast_p_compile is not None:
        compiled = "  ".join(f"Fast@{p} {pct(s.fast_p_compile[p])}" for p in THRESHOLDS)
        lines.append(f"vs torch.compile: {compiled}  geomean {times(s.geomean_speedup_compile)}")
    else:
        lines.append(f"vs torch.compile: not timed ({report.baselines.reason})")
    lines.append(f"correct {pct(s.correct_rate)} of tasks, hacked {pct(s.hacked_rate)} of tasks")
    return "\n".join(lines)


def run_bench(args: argparse.Namespace) -> int:
    import json

    from services.trainer.bench.cache import CACHE_FILE
    from services.trainer.bench.run import Plan, bench, plan_generations
    from services.trainer.bench.tasks import load_task_set

    settings = load_settings_for(args)
    bench_settings = _bench_settings(args, settings.trainer.bench)
    if args.out.exists() and not args.out.is_dir():
        raise CliError(f"--out: {args.out} is a file; name a folder for the report")
    levels, problems = (
        _integers(args.levels, "--levels"),
        [p.strip() for p in (args.problems or "").split(",") if p.strip()],
    )
    if args.generations is not None:
        if args.samples or args.turns or args.model:
            raise CliError("--samples, --turns and --model apply to a policy; a generations file brings its own")
        plan = plan_generations(args.generations, args.tasks, levels, problems)
    else:
        plan = Plan(load_task_set(args.tasks or "builtin", levels, problems), [], [])
    for skipped in plan.skipped:
        print(f"drkernel: skipped {skipped}", file=sys.stderr)
    try:
        report, files = bench(plan, settings, bench_settings, args.out, progress=sys.stderr.isatty())
    except KeyboardInterrupt:
        print(
            f"drkernel: interrupted; what was judged is kept in {args.out / CACHE_FILE}: the same command resumes",
            file=sys.stderr,
        )
        raise
    for failure in report.run.policy_failures:
        print(f"drkernel: no generations for {failure}", file=sys.stderr)
    if report.run.policy_failures and not report.generations:
        raise CliError("the policy failed on every task: nothing was measured", EXIT_SERVER)
    failed = report.summary.verdicts.get("ENVIRONMENT_ERROR", 0)
    if failed:
        print(
            f"drkernel: {failed} evaluation(s) failed in the sandbox (no verdict); rerun to retry them", file=sys.stderr
        )
    if args.json:
        print(json.dumps(report.summary.model_dump(mode="json"), indent=2))
        return EXIT_OK
    for path in files:
        print(f"wrote {path}")
    print(_bench_summary(report))
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
