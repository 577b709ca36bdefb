"""`drkernel eval` and `drkernel serve sandbox`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drkernel.cli import EXIT_FAILED, EXIT_OK, CliError, load_settings_for, print_json, with_cli_ports

if TYPE_CHECKING:
    from drkernel.sections import SecuritySettings


def register(commands: Any, serve_commands: Any) -> None:
    evaluate = commands.add_parser("eval", help="Judge a candidate kernel against a task.")
    evaluate.add_argument("--task", type=Path, required=True, help="KernelBench-format task module.")
    evaluate.add_argument("--candidate", type=Path, required=True, help="Module defining ModelNew.")
    evaluate.add_argument(
        "--server",
        help=(
            "Address of a sandbox server (HOST:PORT, dns:///HOST:PORT, IP list); default: evaluate locally; "
            "TLS and token from the security settings."
        ),
    )
    evaluate.add_argument("--timeout", type=float, default=0.0, help="Seconds (default: the server's).")
    evaluate.add_argument("--device", choices=["cpu", "cuda"], help="Default: the server's.")
    evaluate.add_argument("--seed", type=int, help="Base seed for weights and inputs.")
    evaluate.add_argument("--skip-timing", action="store_true", help="Correctness only.")
    evaluate.add_argument(
        "--profile",
        choices=["strict", "kernelgym", "kernelbench"],
        help="Correctness profile (default: the server's, strict unless configured); docs/EVALUATION.md.",
    )
    evaluate.add_argument("--json", action="store_true", help="Print the EvaluateResponse as proto3 JSON.")
    evaluate.set_defaults(handler=run_eval)

    serve = serve_commands.add_parser("sandbox", help="Run the SandboxService gRPC server.")
    serve.add_argument("--port", type=int, help="gRPC port (default from settings: 50051).")
    serve.add_argument("--metrics-port", type=int, help="Prometheus port (default from settings: 9101).")
    serve.set_defaults(handler=run_serve)


def read_source(path: Path, what: str) -> str:
    """A source file as text, or a one-line error."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CliError(f"{what} {path} is not UTF-8 text (byte {error.start})") from error


def build_request(args: argparse.Namespace) -> Any:
    from drkernel.v1 import common_pb2, sandbox_pb2

    options = sandbox_pb2.EvaluateOptions(timeout_seconds=args.timeout, skip_timing=args.skip_timing)
    if args.device:
        options.device = {"cpu": common_pb2.DEVICE_CPU, "cuda": common_pb2.DEVICE_CUDA}[args.device]
    if args.seed is not None:
        options.seed = args.seed
    if args.profile:
        options.correctness_profile = sandbox_pb2.CorrectnessProfile.Value(
            "CORRECTNESS_PROFILE_" + args.profile.upper()
        )
    return sandbox_pb2.EvaluateRequest(
        request_id=f"cli:{args.candidate.name}",
        reference_source=read_source(args.task, "task file"),
        candidate_source=read_source(args.candidate, "candidate file"),
        task_name=args.task.stem,
        options=options,
    )


async def evaluate_locally(settings: Any, request: Any, device: str | None = None) -> Any:
    """Runs one evaluation with a private, short-lived scheduler (no server): one worker that
    starts one candidate for it (no spares competing for the cores), on ``device`` when given
    (no probe for GPUs)."""
    from services.sandbox.server.scheduler import Scheduler, visible_cuda_devices
    from services.sandbox.server.servicer import request_from_proto, response_proto

    local = settings.sandbox.model_copy(
        update={"cpu_workers": 1, "warm_candidates": 0, "device": device or settings.sandbox.device}
    )
    scheduler = Scheduler(local, visible_cuda_devices(local))
    await scheduler.start()
    try:
        return response_proto(await scheduler.evaluate(request_from_proto(request)))
    finally:
        await scheduler.close()


def evaluate_remotely(address: str, request: Any, security: SecuritySettings) -> Any:
    from services.sandbox.client import SandboxClient

    async def evaluate() -> Any:
        client = SandboxClient(address, concurrency=1, security=security)
        try:
            return await client.evaluate(request)
        finally:
            await client.close()

    return asyncio.run(evaluate())


def _name(enum: Any, value: int, prefix: str) -> str:
    """A proto enum value as a short lower-case word (``STAGE_TINY_RUN`` -> ``tiny_run``)."""
    return str(enum.Name(value)).removeprefix(prefix).lower()


def summary(response: Any) -> str:
    """A readable account of a response for people."""
    from drkernel.v1 import sandbox_pb2 as pb

    lines = [
        f"verdict  {pb.Verdict.Name(response.verdict).removeprefix('VERDICT_')}",
        f"reward   {response.reward:.4f}",
        f"speedup  {response.speedup:.3f}x"
        if response.timing.valid
        else f"speedup  n/a ({response.timing.invalid_reason or 'not reached'})",
        f"device   {response.device_name}   time {response.evaluation_seconds:.1f} s",
        f"profile  {_name(pb.CorrectnessProfile, response.correctness_profile, 'CORRECTNESS_PROFILE_')}",
        "stages:",
    ]
    for stage in response.stages:
        status = pb.StageStatus.Name(stage.status).removeprefix("STAGE_STATUS_").lower()
        lines.append(
            f"  {_name(pb.Stage, stage.stage, 'STAGE_'):<12} {status:<8} {stage.elapsed_seconds:6.2f} s  {stage.detail}"
        )
    if response.checks:
        lines.append("checks:")
        for check in response.checks:
            state = "skipped" if check.skipped else "passed" if check.passed else "FAILED"
            lines.append(
                f"  {_name(pb.InputVariant, check.variant, 'INPUT_VARIANT_'):<9} {state:<8} "
                f"rel_l2={check.rel_l2_error:.2e}  {check.description}"
            )
    if response.hack_reasons:
        lines.append("hack reasons:")
        lines += [f"  - {reason}" for reason in response.hack_reasons]
    if response.error:
        lines.append("error:")
        lines += [f"  {line}" for line in response.error.splitlines()]
    lines.append(f"feedback: {response.feedback}")
    return "\n".join(lines)


def run_eval(args: argparse.Namespace) -> int:
    from drkernel.v1 import sandbox_pb2 as pb

    settings = load_settings_for(args)
    request = build_request(args)
    if not args.json and sys.stderr.isatty():
        print("evaluating in the sandbox...", file=sys.stderr)
    if args.server:
        response = evaluate_remotely(args.server, request, settings.security)
    else:
        response = asyncio.run(evaluate_locally(settings, request, args.device))
    if args.json:
        print_json(response)
    else:
        print(summary(response))
    return EXIT_OK if response.verdict == pb.VERDICT_CORRECT else EXIT_FAILED


def run_serve(args: argparse.Namespace) -> int:
    from services.sandbox.server.servicer import serve

    settings = load_settings_for(args, server=True)
    server = with_cli_ports(settings.sandbox.server, args)
    settings = settings.model_copy(update={"sandbox": settings.sandbox.model_copy(update={"server": server})})
    asyncio.run(serve(settings))
    return EXIT_OK
