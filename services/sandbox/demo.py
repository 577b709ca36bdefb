"""`make demo`: start a local sandbox server, judge the built-in suite's reference solutions
and a few broken candidates through it over gRPC, and print a table.

    python -m services.sandbox.demo [--workers N] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass

from drkernel.config import load_settings
from drkernel.logs import configure_logging
from drkernel.sections import LogSettings
from drkernel.v1 import common_pb2
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.client import judge_with_progress, local_sandbox
from services.sandbox.tasks import EXAMPLES_DIR, builtin_task, builtin_tasks


@dataclass(frozen=True)
class Case:
    """One candidate to judge and the verdict a correct sandbox gives it."""

    task: str
    candidate: str
    request: pb.EvaluateRequest
    expected: int


def cases(device: int) -> list[Case]:
    options = pb.EvaluateOptions(device=device)
    result = []
    for task in builtin_tasks():
        if task.solution is None:
            continue
        request = pb.EvaluateRequest(
            request_id=f"{task.name}/solution",
            task_name=task.name,
            reference_source=task.source(),
            candidate_source=task.solution.read_text(),
            options=options,
        )
        result.append(Case(task.name, "reference solution", request, pb.VERDICT_CORRECT))
    relu = builtin_task("l1_relu")
    broken = {
        "relu_syntax_error.py": pb.VERDICT_SYNTAX_ERROR,
        "relu_fixed_shape.py": pb.VERDICT_INCORRECT,
        "relu_torch_only.py": pb.VERDICT_HACKED,
        "relu_grad_branch.py": pb.VERDICT_HACKED,
    }
    for name, verdict in broken.items():
        request = pb.EvaluateRequest(
            request_id=f"l1_relu/{name}",
            task_name="l1_relu",
            reference_source=relu.source(),
            candidate_source=(EXAMPLES_DIR / name).read_text(),
            options=options,
        )
        result.append(Case("l1_relu", name.removesuffix(".py"), request, verdict))
    return result


def table(todo: list[Case], responses: dict[str, pb.EvaluateResponse]) -> tuple[str, int]:
    """The result table and the number of cases judged other than expected."""
    header = (
        f"{'task':<26} {'candidate':<20} {'verdict':<14} {'expected':<9} "
        f"{'reward':>6} {'variants':>8} {'speedup':>8} {'seconds':>7}"
    )
    lines, wrong = [header, "-" * len(header)], 0
    for case in todo:
        response = responses[case.request.request_id]
        verdict = pb.Verdict.Name(response.verdict).removeprefix("VERDICT_")
        ok = response.verdict == case.expected
        wrong += not ok
        variants = sum(c.passed for c in response.checks)
        speedup = f"{response.speedup:.2f}x" if response.timing.valid else "n/a"
        lines.append(
            f"{case.task:<26} {case.candidate:<20} {verdict:<14} {'yes' if ok else 'NO':<9} {response.reward:>6.3f} "
            f"{variants:>8} {speedup:>8} {response.evaluation_seconds:>7.1f}"
        )
    return "\n".join(lines), wrong


async def run(workers: int, device: str) -> int:
    print(f"starting a local sandbox server ({workers} CPU worker(s), device {device})...", file=sys.stderr)
    settings = load_settings()
    async with local_sandbox(settings.sandbox, settings.security, cpu_workers=workers, device=device) as address:
        todo = cases(common_pb2.DEVICE_CUDA if device == "cuda" else common_pb2.DEVICE_CPU)
        started = time.monotonic()
        requests = [case.request for case in todo]
        responses = await judge_with_progress(address, requests, security=settings.security)
        elapsed = time.monotonic() - started
    text, wrong = table(todo, responses)
    print(text)
    print(f"\n{len(todo)} candidates judged in {elapsed:.0f} s through {address}; {wrong} judged other than expected.")
    return 1 if wrong else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="CPU worker slots (default 2).")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args(argv)
    configure_logging(LogSettings(level="warning", format="console"))
    return asyncio.run(run(args.workers, args.device))


if __name__ == "__main__":
    sys.exit(main())
