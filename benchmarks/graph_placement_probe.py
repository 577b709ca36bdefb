"""Does a launch-bound model's replayed-graph time depend on where one capture placed it?

    python benchmarks/graph_placement_probe.py [--task l2_gemm_bias_relu] [--captures 12] [--calls 64]

The judge times launch-bound models by replaying ``calls`` forward calls captured as one CUDA
graph, captured once per evaluation (``services.sandbox.shared.clock.GraphedCalls``), with the
judge's own clock (L2 flush, persisting-L2 reset, spin lead). Over repeated evaluations the
speedup of ``l2_gemm_bias_relu`` moved between discrete levels that lasted a whole evaluation,
with the reference (cuBLAS) moving and the candidate steady. This probe captures the task's
reference and its built-in solution ``--captures`` times in one process, each capture over
fresh static inputs, times ``--trials`` replays of each, and prints one JSON line per capture
with both medians (us per call), then a summary: the spread of per-capture medians. Needs CUDA.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="l2_gemm_bias_relu")
    parser.add_argument("--captures", type=int, default=12)
    parser.add_argument("--calls", type=int, default=64)
    parser.add_argument("--trials", type=int, default=30)
    args = parser.parse_args()

    import torch

    from services.sandbox.shared.clock import Clock, GraphedCalls
    from services.sandbox.shared.runner import ModelRunner, flatten_outputs, load_module
    from services.sandbox.shared.task_source import parse_task
    from services.sandbox.tasks import builtin_task
    from services.sandbox.wire.judge_candidate import RunSpec

    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    clock = Clock(device, 256 * 2**20)
    clock.prepare()
    task = parse_task(builtin_task(args.task).source())
    solution = (ROOT / "services" / "sandbox" / "tasks" / "solutions" / f"{args.task}.py").read_text()
    scratch = Path(tempfile.mkdtemp(prefix="placement-"))
    models = {
        "reference": ModelRunner(
            task.inputs_source, lambda _c: load_module(task.source, scratch, "task").Model, device, scratch
        ),
        "candidate": ModelRunner(
            task.inputs_source, lambda _c: load_module(solution, scratch, "solution").ModelNew, device, scratch
        ),
    }
    medians: dict[str, list[float]] = {name: [] for name in models}
    for capture in range(args.captures):
        record: dict[str, object] = {"capture": capture}
        for name, runner in models.items():
            spec = RunSpec(weight_seed=42, input_seed=1000 + capture * 7919, train=True)
            model = runner.model(spec)

            def forward(
                inputs: list[object], model: torch.nn.Module = model, runner: ModelRunner = runner, spec: RunSpec = spec
            ) -> list[torch.Tensor]:
                return flatten_outputs(runner.forward(model, inputs, spec))

            for _ in range(2):  # eager warm-up, as the judge's correctness calls are
                forward(runner.inputs(spec))
            graph = GraphedCalls(forward, [runner.inputs(spec.call(i)) for i in range(args.calls)], device)
            times = []
            for trial in range(3 + args.trials):
                graph.refill([runner.inputs(spec.call(1000 * trial + i)) for i in range(args.calls)])
                timed = clock.time(graph.replay, args.calls, graph=True)
                if trial >= 3:
                    times.append(timed.stream_us)
            median = statistics.median(times)
            medians[name].append(median)
            cv = statistics.stdev(times) / statistics.mean(times)
            record[name] = {"median_us": round(median, 4), "cv": round(cv, 4)}
            del graph
        print(json.dumps(record), flush=True)
    summary = {}
    for name, values in medians.items():
        summary[name] = {
            "min_us": round(min(values), 4),
            "max_us": round(max(values), 4),
            "cv_of_capture_medians": round(statistics.stdev(values) / statistics.mean(values), 4),
        }
    speedups = [r / c for r, c in zip(medians["reference"], medians["candidate"], strict=True)]
    summary["speedup"] = {
        "per_capture": [round(s, 4) for s in speedups],
        "cv": round(statistics.stdev(speedups) / statistics.mean(speedups), 4),
    }
    print(json.dumps({"task": args.task, "calls": args.calls, "trials": args.trials, **summary}))


if __name__ == "__main__":
    main()
