"""Profiler benchmark: coverage of lazy against fused kernels, coverage against speedup, and
what profiling costs per evaluation.

    python benchmarks/profiler_bench.py --device cuda --out OUT [--size 4096] [--repeats 3]

Uses the built-in task l2_gemm_bias_relu resized to a GEMM-bound shape (--size for batch,
in_features and out_features) and three candidates: the fused solution (GEMM, bias and ReLU in
one Triton kernel), a lazy one (GEMM in PyTorch, only bias + ReLU in Triton:
tests/profiler/data/gemm_bias_relu_lazy.py) and an elementwise-only task solved properly
(l1_relu) as a second fused point. For each: verdict, coverage, speedup and Amdahl's bound
1 / (1 - coverage) on what accelerating the candidate's own kernels alone could give. Profiling
overhead: each candidate evaluated --repeats times with and without the profile stage.
Writes OUT/profiler.jsonl and prints a table last.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drkernel.logs import configure_logging
from drkernel.sections import LogSettings
from drkernel.v1 import (
    common_pb2,
    sandbox_pb2_grpc,
)
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.client import LocalSandbox
from services.sandbox.shared.task_source import with_constants
from services.sandbox.tasks import builtin_task

LAZY = ROOT / "tests" / "profiler" / "data" / "gemm_bias_relu_lazy.py"


def cases(size: int) -> list[tuple[str, str, str]]:
    gemm = builtin_task("l2_gemm_bias_relu")
    task = with_constants(gemm.source(), {"batch_size": size, "in_features": size, "out_features": size})
    relu = builtin_task("l1_relu")
    relu_task = with_constants(relu.source(), {"batch_size": size, "dim": size * 4})
    return [
        ("gemm_bias_relu fused", task, gemm.solution.read_text()),
        ("gemm_bias_relu lazy", task, LAZY.read_text()),
        ("relu fused", relu_task, relu.solution.read_text()),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    configure_logging(LogSettings(level="warning", format="console"))
    args.out.mkdir(parents=True, exist_ok=True)
    device = common_pb2.DEVICE_CUDA if args.device == "cuda" else common_pb2.DEVICE_CPU
    sandbox = LocalSandbox(device=args.device, cpu_workers=1)
    rows = []
    with sandbox.channel() as channel, (args.out / "profiler.jsonl").open("w") as log:
        stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
        for name, task, candidate in cases(args.size):
            seconds: dict[bool, list[float]] = {True: [], False: []}
            profile_stage: list[float] = []
            response = None
            for attempt in range(args.repeats):
                for skip_profile in (False, True):
                    options = pb.EvaluateOptions(device=device, skip_profile=skip_profile, skip_timing=attempt > 0)
                    result = stub.Evaluate(
                        pb.EvaluateRequest(
                            request_id=name, reference_source=task, candidate_source=candidate, options=options
                        ),
                        timeout=1800,
                    )
                    seconds[skip_profile].append(result.evaluation_seconds)
                    if not skip_profile:
                        profile_stage += [s.elapsed_seconds for s in result.stages if s.stage == pb.STAGE_PROFILE]
                        response = response or result
            assert response is not None
            coverage = response.coverage
            row = {
                "name": name,
                "verdict": pb.Verdict.Name(response.verdict),
                "coverage": coverage,
                "speedup": response.speedup,
                "amdahl_bound": 1 / (1 - coverage) if coverage < 1 else float("inf"),
                "reward": response.reward,
                "total_device_time_us": response.profile.total_device_time_us,
                "reference_total_device_time_us": response.profile.reference_total_device_time_us,
                "kernels": [(k.name, k.is_candidate, k.device_time_us) for k in response.profile.kernels[:6]],
                "profile_stage_seconds_median": statistics.median(profile_stage) if profile_stage else 0.0,
                "evaluation_seconds_with_profile": seconds[False],
                "evaluation_seconds_without_profile": seconds[True],
                "device": response.device_name,
            }
            rows.append(row)
            log.write(json.dumps(row) + "\n")
            print(
                f"{name}: {row['verdict']} coverage={coverage:.4f} speedup={response.speedup:.3f}",
                file=sys.stderr,
                flush=True,
            )
    sandbox.stop()
    print(
        f"{'candidate':<24} {'verdict':<16} {'coverage':>9} {'speedup':>8} {'amdahl':>8} {'profile_s':>9} "
        f"{'eval_s(+p)':>10} {'eval_s(-p)':>10}"
    )
    for row in rows:
        with_p = statistics.median(row["evaluation_seconds_with_profile"][1:] or row["evaluation_seconds_with_profile"])
        without = statistics.median(
            row["evaluation_seconds_without_profile"][1:] or row["evaluation_seconds_without_profile"]
        )
        print(
            f"{row['name']:<24} {row['verdict'].removeprefix('VERDICT_'):<16} {row['coverage']:>9.4f} "
            f"{row['speedup']:>8.3f} "
            f"{row['amdahl_bound']:>8.3f} {row['profile_stage_seconds_median']:>9.3f} {with_p:>10.2f} {without:>10.2f}"
        )
        print(
            "    top kernels: "
            + "; ".join(f"{n} ({'own' if own else 'torch'}) {t:.1f}us" for n, own, t in row["kernels"])
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
