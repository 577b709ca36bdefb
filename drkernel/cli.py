"""The ``drkernel`` command: a thin dispatcher over the services' own command modules.

Each service contributes its commands through ``services/<name>/cli.py``; those modules
import heavy code (torch, the model) only inside their handlers, so ``drkernel --help`` and
argument errors stay fast. Failures end with one readable line on stderr and an exit code:
0 success, 1 a judged failure (for example a candidate that is not correct), 2 bad input or
usage, 3 the server could not be reached or failed.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from google.protobuf.message import Message

    from drkernel.config import Settings
    from drkernel.sections import ServerSettings

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_SERVER = 0, 1, 2, 3

# Modules with `register(commands, serve_commands)`; each adds its subcommands.
COMMAND_MODULES = (
    "services.sandbox.cli",
    "services.profiler.cli",
    "services.policy.cli",
    "services.trainer.cli",
    "drkernel.up",
)


class CliError(Exception):
    """A failure reported as one line, with its exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="drkernel", description="Train and judge LLM-written Triton kernels.")
    parser.add_argument("--config", type=Path, default=None, help="YAML settings file (also DRKERNEL_CONFIG).")
    parser.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        default=None,
        help="Log level on stderr (default: warning for commands, settings for servers).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser("serve", help="Run a service's gRPC server.")
    serve_commands = serve.add_subparsers(dest="service", required=True, metavar="SERVICE")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(commands, serve_commands)
    return parser


def load_settings_for(args: argparse.Namespace, *, server: bool = False) -> Settings:
    """Loads the settings named by --config and sets up logging: servers log as configured,
    other commands log warnings as text so that stdout stays theirs. A server's TLS and token
    files are read here too, so that a bad one stops it before workers start or a model loads."""
    from drkernel.config import load_settings
    from drkernel.logs import configure_logging
    from drkernel.sections import LogSettings

    settings = load_settings(args.config)
    log = settings.log if server else LogSettings(level="warning", format="console")
    if args.log_level:
        log = log.model_copy(update={"level": args.log_level})
    configure_logging(log)
    if server:
        from drkernel.credentials import bearer_token, server_credentials

        server_credentials(settings.security)
        bearer_token(settings.security)
    return settings


def print_json(message: Message) -> None:
    """Prints a response in the proto3 JSON mapping with the .proto field names, every field shown."""
    from google.protobuf import json_format

    print(
        json_format.MessageToJson(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
    )


def with_cli_ports(server: ServerSettings, args: argparse.Namespace) -> ServerSettings:
    """``server`` with the --port and --metrics-port given on the command line, if any."""
    return server.model_copy(
        update={k: v for k, v in (("port", args.port), ("metrics_port", args.metrics_port)) if v is not None}
    )


def _describe(error: BaseException) -> tuple[str, int]:
    """One line for an error that ended a command, and the exit code it gets."""
    import grpc
    from pydantic import ValidationError

    from drkernel.errors import DrKernelError

    if isinstance(error, CliError):
        return str(error), error.exit_code
    if isinstance(error, grpc.RpcError):
        code = error.code()
        exit_code = EXIT_USAGE if code == grpc.StatusCode.INVALID_ARGUMENT else EXIT_SERVER
        return f"server answered {code.name}: {error.details()}", exit_code
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"invalid settings: {where}: {first['msg']}", EXIT_USAGE
    if isinstance(error, DrKernelError):
        return str(error), EXIT_USAGE
    if isinstance(error, (FileNotFoundError, IsADirectoryError, PermissionError)):
        return f"{error.strerror}: {error.filename}", EXIT_USAGE
    logging.getLogger("drkernel.cli").debug("unexpected error", exc_info=error)
    return f"internal error: {type(error).__name__}: {error} (--log-level debug shows the traceback)", EXIT_SERVER


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # noqa: BLE001 - every expected failure becomes one line
        message, code = _describe(error)
        print(f"drkernel: {message}", file=sys.stderr)
        return code
