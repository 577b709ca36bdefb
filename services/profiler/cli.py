"""`drkernel profile` and `drkernel serve profiler`."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from drkernel.cli import EXIT_FAILED, EXIT_OK, load_settings_for, print_json, with_cli_ports


def register(commands: Any, serve_commands: Any) -> None:
    profile = commands.add_parser("profile", help="Where a candidate's device time goes, and its coverage.")
    profile.add_argument("--task", type=Path, required=True, help="KernelBench-format task module.")
    profile.add_argument("--candidate", type=Path, required=True, help="Module defining ModelNew.")
    profile.add_argument(
        "--server",
        help=(
            "Address of a profiler server (HOST:PORT, dns:///HOST:PORT, IP list); default: profile locally; "
            "TLS and token from the security settings."
        ),
    )
    profile.add_argument("--device", choices=["cpu", "cuda"], help="Default: the sandbox's.")
    profile.add_argument("--timeout", type=float, default=0.0, help="Seconds (default: the sandbox's).")
    profile.add_argument("--json", action="store_true", help="Print the ProfileResponse as proto3 JSON.")
    profile.set_defaults(handler=run_profile)

    serve = serve_commands.add_parser("profiler", help="Run the ProfilerService gRPC server.")
    serve.add_argument("--port", type=int, help="gRPC port (default from settings: 50052).")
    serve.add_argument("--metrics-port", type=int, help="Prometheus port (default from settings: 9102).")
    serve.add_argument("--sandbox", help="host:port of the SandboxService (default from settings).")
    serve.set_defaults(handler=run_serve)


def summary(response: Any) -> str:
    from drkernel.v1 import sandbox_pb2

    lines = [f"verdict   {sandbox_pb2.Verdict.Name(response.verdict).removeprefix('VERDICT_')}"]
    if response.error:
        lines.append(f"error     {response.error}")
    lines += [
        f"coverage  {response.coverage:.1%} of {response.total_device_time_us:.4g} us per forward call "
        f"(reference: {response.reference_total_device_time_us:.4g} us)",
        f"device    {response.device_name}; {response.method}",
        f"{'kernel':<48} {'owner':<9} {'calls':>6} {'us/call':>12} {'share':>7}",
    ]
    for kernel in response.kernels:
        share = kernel.device_time_us / response.total_device_time_us if response.total_device_time_us else 0.0
        lines.append(
            f"{kernel.name[:48]:<48} {'yours' if kernel.is_candidate else 'PyTorch':<9} {kernel.calls:>6.3g} "
            f"{kernel.device_time_us:>12.4g} {share:>7.1%}"
        )
    if response.feedback:
        lines.append(f"feedback: {response.feedback}")
    return "\n".join(lines)


def run_profile(args: argparse.Namespace) -> int:
    from drkernel.v1 import common_pb2, profiler_pb2, sandbox_pb2
    from services.profiler.service import evaluation_request, profile_response
    from services.sandbox.cli import evaluate_locally, read_source

    settings = load_settings_for(args)
    request = profiler_pb2.ProfileRequest(
        request_id=f"cli:{args.candidate.name}",
        reference_source=read_source(args.task, "task file"),
        candidate_source=read_source(args.candidate, "candidate file"),
        timeout_seconds=args.timeout,
    )
    if args.device:
        request.device = {"cpu": common_pb2.DEVICE_CPU, "cuda": common_pb2.DEVICE_CUDA}[args.device]
    if args.server:
        from drkernel.channels import open_channel
        from drkernel.v1 import profiler_pb2_grpc

        service = profiler_pb2.DESCRIPTOR.services_by_name["ProfilerService"].full_name
        with open_channel(args.server, service, settings.security) as channel:
            wait = (args.timeout or settings.sandbox.max_timeout_seconds) + 120
            response = profiler_pb2_grpc.ProfilerServiceStub(channel).Profile(request, timeout=wait)
    else:
        response = profile_response(asyncio.run(evaluate_locally(settings, evaluation_request(request), args.device)))
    if args.json:
        print_json(response)
    else:
        print(summary(response))
    return EXIT_OK if response.verdict == sandbox_pb2.VERDICT_CORRECT else EXIT_FAILED


def run_serve(args: argparse.Namespace) -> int:
    from services.profiler.server import serve

    settings = load_settings_for(args, server=True)
    profiler = settings.profiler.model_copy(
        update={
            "server": with_cli_ports(settings.profiler.server, args),
            **({"sandbox_address": args.sandbox} if args.sandbox else {}),
        }
    )
    asyncio.run(serve(settings.model_copy(update={"profiler": profiler})))
    return EXIT_OK
