"""`drkernel generate` and `drkernel serve policy`."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drkernel.cli import EXIT_OK, CliError, load_settings_for, print_json, with_cli_ports

if TYPE_CHECKING:
    from drkernel.sections import SecuritySettings

BACKENDS = ("transformers", "vllm")


def register(commands: Any, serve_commands: Any) -> None:
    generate = commands.add_parser(
        "generate",
        help="Sample completions from the policy model, locally or from a policy server.",
        description=(
            "The prompt is sent as one user message rendered with the model's chat template; "
            "--raw continues it as plain text instead. Without --server the model is loaded "
            "here (default: the embedded SmolLM2-135M-Instruct)."
        ),
    )
    generate.add_argument("--prompt", required=True, help="The prompt text.")
    generate.add_argument("--raw", action="store_true", help="Continue the text as it is (no chat template).")
    generate.add_argument(
        "--server",
        help=(
            "Address of a policy server (HOST:PORT or dns:///HOST:PORT); default: generate locally; "
            "TLS and token from the security settings."
        ),
    )
    generate.add_argument(
        "--model", type=Path, help="Model directory for local generation (default: the embedded one)."
    )
    generate.add_argument("--max-tokens", type=int, help="Most tokens per completion (default from settings: 512).")
    generate.add_argument("--n", type=int, default=1, help="Completions to sample (default 1).")
    generate.add_argument("--seed", type=int, help="Seed of the random draws (default: drawn by the server).")
    generate.add_argument("--temperature", type=float, default=1.0, help="0 is greedy (default 1).")
    generate.add_argument("--top-p", type=float, default=1.0, help="Nucleus sampling mass (default 1: off).")
    generate.add_argument("--stop", action="append", default=[], help="Stop string; repeatable.")
    generate.add_argument("--json", action="store_true", help="Print the GenerateResponse as proto3 JSON.")
    generate.set_defaults(handler=run_generate)

    serve = serve_commands.add_parser("policy", help="Run the PolicyService gRPC server.")
    serve.add_argument("--port", type=int, help="gRPC port (default from settings: 50053).")
    serve.add_argument("--metrics-port", type=int, help="Prometheus port (default from settings: 9103).")
    serve.add_argument("--backend", choices=BACKENDS, help="Inference engine (default: vllm when installed).")
    serve.add_argument("--model", type=Path, help="Model directory (default: the embedded one).")
    serve.set_defaults(handler=run_serve)


def build_request(args: argparse.Namespace) -> Any:
    from drkernel.v1 import policy_pb2 as pb

    if args.n < 1:
        raise CliError(f"--n must be at least 1, got {args.n}")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise CliError(f"--max-tokens must be at least 1, got {args.max_tokens}")
    if args.seed is not None and args.seed < 0:
        raise CliError(f"--seed must be >= 0, got {args.seed}")
    prompt = (
        pb.Prompt(text=args.prompt)
        if args.raw
        else pb.Prompt(chat=pb.Chat(messages=[pb.ChatMessage(role="user", content=args.prompt)]))
    )
    sampling = pb.SamplingParams(
        n=args.n,
        temperature=args.temperature,
        top_p=args.top_p,
        max_tokens=args.max_tokens or 0,
        stop=args.stop,
    )
    if args.seed is not None:
        sampling.seed = args.seed
    return pb.GenerateRequest(request_id="cli", prompt=prompt, sampling=sampling)


async def generate_locally(settings: Any, request: Any) -> Any:
    """Loads the model here and answers like a server would."""
    from services.policy.engine import open_engine
    from services.policy.servicer import generate_response, generation_request

    engine = open_engine(settings.policy)
    try:
        return generate_response(await engine.generate(generation_request(request)))
    finally:
        await engine.close()


def generate_remotely(address: str, request: Any, security: SecuritySettings) -> Any:
    from drkernel.channels import open_channel
    from drkernel.v1 import policy_pb2, policy_pb2_grpc

    service = policy_pb2.DESCRIPTOR.services_by_name["PolicyService"].full_name
    with open_channel(address, service, security) as channel:
        return policy_pb2_grpc.PolicyServiceStub(channel).Generate(request)


def run_generate(args: argparse.Namespace) -> int:
    from drkernel.v1 import policy_pb2 as pb

    if args.server and args.model:
        raise CliError("--model is for local generation; a server serves its own model")
    settings = load_settings_for(args)
    if args.model:
        settings = settings.model_copy(update={"policy": settings.policy.model_copy(update={"model": args.model})})
    request = build_request(args)
    if args.server:
        response = generate_remotely(args.server, request, settings.security)
    else:
        response = asyncio.run(generate_locally(settings, request))
    if args.json:
        print_json(response)
        return EXIT_OK
    for completion in response.completions:
        if len(response.completions) > 1:
            reason = pb.FinishReason.Name(completion.finish_reason).removeprefix("FINISH_REASON_")
            print(f"--- completion {completion.index} ({reason.lower()}, {len(completion.token_ids)} tokens)")
        print(completion.text)
    return EXIT_OK


def run_serve(args: argparse.Namespace) -> int:
    from services.policy.server import serve

    settings = load_settings_for(args, server=True)
    policy = settings.policy.model_copy(
        update={
            "server": with_cli_ports(settings.policy.server, args),
            **{k: v for k, v in (("backend", args.backend), ("model", args.model)) if v is not None},
        }
    )
    asyncio.run(serve(settings.model_copy(update={"policy": policy})))
    return EXIT_OK
