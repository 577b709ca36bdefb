"""Sandbox benchmark: verdicts, speedups, timing stability and evaluation latency.

    python benchmarks/sandbox_bench.py --device cuda --out OUT [--tasks all|l1_relu,...]
        [--repeats 10 --repeat-tasks l1_relu,l2_gemm_bias_relu] [--kernelbench PATH [--warm-runs N]]

Starts a sandbox server on this machine and sends everything through gRPC, as a trainer would.
1. The built-in suite: every reference solution, with timing: verdict, speedup, reference and
   candidate medians, per-model coefficient of variation, evaluation latency.
2. Stability: the same candidates evaluated ``--repeats`` times (a fresh process each time);
   the coefficient of variation of the speedup across repeats.
3. KernelBench (``--kernelbench`` checkout, files unchanged) with our solutions from
   benchmarks/kernelbench/solutions/: latency of the whole funnel per evaluation, cold (the
   problem's first evaluation on the server) and then ``--warm-runs`` times warm (compiled
   kernels and reference outputs cached).
Writes one JSON object per evaluation to OUT/sandbox.jsonl and prints a table last.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drkernel.logs import configure_logging
from drkernel.sections import LogSettings
from drkernel.v1 import common_pb2, sandbox_pb2_grpc
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.client import LocalSandbox
from services.sandbox.tasks import builtin_tasks, kernelbench_problems

SOLUTIONS = ROOT / "benchmarks" / "kernelbench" / "solutions"


def record(response: pb.EvaluateResponse, group: str, name: str, wall_seconds: float) -> dict[str, object]:
    timing = response.timing
    return {
        "group": group,
        "name": name,
        "verdict": pb.Verdict.Name(response.verdict),
        "error": response.error[:500],
        "hack_reasons": list(response.hack_reasons),
        "speedup": response.speedup,
        "timing_valid": timing.valid,
        "reference_median_us": timing.reference.median_us,
        "candidate_median_us": timing.candidate.median_us,
        "reference_cv": timing.reference.coefficient_of_variation,
        "candidate_cv": timing.candidate.coefficient_of_variation,
        "calls_per_trial": timing.calls_per_trial,
        "reference_trials": timing.reference.trials,
        "candidate_trials": timing.candidate.trials,
        "timing_method": timing.method,
        "evaluation_seconds": response.evaluation_seconds,
        "queue_seconds": response.queue_seconds,
        "wall_seconds": wall_seconds,
        "stages": {pb.Stage.Name(s.stage): round(s.elapsed_seconds, 4) for s in response.stages},
        "checks": [
            {"description": c.description, "passed": c.passed, "seconds": round(c.elapsed_seconds, 4)}
            for c in response.checks
        ],
        "device": response.device_name,
    }


def run_one(
    stub: sandbox_pb2_grpc.SandboxServiceStub, request: pb.EvaluateRequest
) -> tuple[pb.EvaluateResponse, float]:
    started = time.monotonic()
    response = stub.Evaluate(request, timeout=3600)
    return response, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tasks", default="all", help="Comma-separated built-in task names, 'all' or 'none'.")
    parser.add_argument("--repeats", type=int, default=0)
    parser.add_argument("--repeat-tasks", default="l1_relu,l1_softmax,l2_gemm_bias_relu,l1_matmul")
    parser.add_argument("--kernelbench", type=Path, help="KernelBench checkout (problems with our solutions).")
    parser.add_argument(
        "--kernelbench-problems",
        default="",
        help=(
            "Comma-separated level/name, e.g. level1/19_ReLU,level2/12_Gemm_Multiply_LeakyReLU "
            "(default: every level-1 solution)."
        ),
    )
    parser.add_argument(
        "--warm-runs", type=int, default=1, help="Warm evaluations of each KernelBench problem after its cold one."
    )
    args = parser.parse_args()
    configure_logging(LogSettings(level="warning", format="console"))
    args.out.mkdir(parents=True, exist_ok=True)
    device = common_pb2.DEVICE_CUDA if args.device == "cuda" else common_pb2.DEVICE_CPU
    sandbox = LocalSandbox(device=args.device, cpu_workers=1)
    rows: list[dict[str, object]] = []
    log = (args.out / "sandbox.jsonl").open("w")

    def keep(row: dict[str, object]) -> None:
        rows.append(row)
        log.write(json.dumps(row) + "\n")
        log.flush()
        print(
            f"{row['group']:<10} {row['name']:<34} {row['verdict']:<18} speedup={row['speedup']:.3f} "
            f"latency={row['evaluation_seconds']:.2f}s",
            file=sys.stderr,
            flush=True,
        )

    described = None
    with sandbox.channel() as channel:
        stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
        described = stub.Describe(pb.DescribeRequest())
        tasks = (
            []
            if args.tasks == "none"
            else [t for t in builtin_tasks() if args.tasks == "all" or t.name in args.tasks.split(",")]
        )
        for task in tasks:
            request = pb.EvaluateRequest(
                request_id=task.name,
                reference_source=task.source(),
                candidate_source=task.solution.read_text(),
                options=pb.EvaluateOptions(device=device),
            )
            response, wall = run_one(stub, request)
            keep(record(response, "suite", task.name, wall))
        for name in [n for n in args.repeat_tasks.split(",") if n] if args.repeats else []:
            task = next(t for t in builtin_tasks() if t.name == name)
            for attempt in range(args.repeats):
                request = pb.EvaluateRequest(
                    request_id=f"{name}#{attempt}",
                    reference_source=task.source(),
                    candidate_source=task.solution.read_text(),
                    options=pb.EvaluateOptions(device=device),
                )
                response, wall = run_one(stub, request)
                keep(record(response, "repeat", name, wall))
        if args.kernelbench:
            wanted = {name for name in args.kernelbench_problems.split(",") if name}
            for problem in kernelbench_problems(args.kernelbench):
                key = f"level{problem.level}/{problem.path.stem}"
                solution = SOLUTIONS / f"level{problem.level}" / problem.path.name
                if not solution.is_file() or (wanted and key not in wanted) or (not wanted and problem.level != 1):
                    continue
                for attempt in ["cold", *["warm"] * args.warm_runs]:
                    request = pb.EvaluateRequest(
                        request_id=f"{problem.name}:{attempt}",
                        task_name=problem.name,
                        reference_source=problem.source(),
                        candidate_source=solution.read_text(),
                        options=pb.EvaluateOptions(device=device),
                    )
                    response, wall = run_one(stub, request)
                    keep(record(response, f"kb-{attempt}", problem.name, wall))
    sandbox.stop()
    log.close()
    print_table(rows, described)
    return 0


def print_table(rows: list[dict[str, object]], described: pb.DescribeResponse | None) -> None:
    if described is not None:
        print("isolation: " + ", ".join(f"{m.name}={'on' if m.active else 'OFF'}" for m in described.isolation))
        print("workers:   " + ", ".join(f"{w.id} ({w.device_name})" for w in described.workers))
    print(
        f"{'group':<9} {'task':<32} {'verdict':<16} {'speedup':>8} {'ref_us':>10} {'cand_us':>10} {'cand_cv':>8} "
        f"{'latency_s':>9}"
    )
    for row in rows:
        if row["group"] == "repeat":
            continue
        print(
            f"{row['group']:<9} {row['name']:<32} {str(row['verdict']).removeprefix('VERDICT_'):<16} "
            f"{row['speedup']:>8.3f} {row['reference_median_us']:>10.1f} {row['candidate_median_us']:>10.1f} "
            f"{row['candidate_cv']:>8.4f} {row['evaluation_seconds']:>9.2f}"
        )
    repeats: dict[str, list[float]] = {}
    for row in rows:
        if row["group"] == "repeat" and row["verdict"] == "VERDICT_CORRECT":
            repeats.setdefault(str(row["name"]), []).append(float(row["speedup"]))  # type: ignore[arg-type]
    for name, speedups in repeats.items():
        mean = statistics.fmean(speedups)
        cv = statistics.stdev(speedups) / mean if len(speedups) > 1 and mean else 0.0
        print(
            f"repeat    {name:<32} n={len(speedups):<3} speedup mean={mean:.4f} cv={cv:.4%} "
            f"min={min(speedups):.4f} max={max(speedups):.4f}"
        )


if __name__ == "__main__":
    sys.exit(main())
