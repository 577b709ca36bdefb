"""A candidate that uses CUDA graphs inside forward, captured inside the judge's own CUDA graph.

    python benchmarks/cuda_graph_nesting_probe.py [--calls 8] [--shape 16,4096] [FILE ...]

For launch-bound models the timing stage captures several forward calls as one CUDA graph
(``services.sandbox.shared.clock.GraphedCalls``) and replays it with fresh inputs copied into its
static inputs. A candidate whose forward replays a graph of its own (``graph.replay()``) is
then captured while it launches a graph. This probe does exactly that, outside the sandbox, for
each FILE (default: ``tests/sandbox/legit/cuda_graph_inside.py`` and
``tests/sandbox/hacks_gpu/cuda_graph_replay.py``), in two cases, each in a fresh process (an
illegal address ends a CUDA context):

- ``warm``: the model has seen the shape (two eager calls, as the judge's correctness and
  warm-up calls do) before the judge's capture;
- ``cold``: the judge's capture is the first call for that shape (the model's own capture then
  runs inside the judge's).

Each prints one JSON line: whether the judge's capture succeeded (or its error), and for
three replays with fresh inputs the largest difference between each call's output and
``torch.relu`` of that call's input, then the same for an eager call after the replays.
Needs CUDA.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILES = ("tests/sandbox/legit/cuda_graph_inside.py", "tests/sandbox/hacks_gpu/cuda_graph_replay.py")


def _last_line(error: BaseException) -> str:
    return (traceback.format_exception_only(type(error), error)[-1].strip())[:300]


def probe(path: Path, case: str, calls: int, shape: tuple[int, ...]) -> dict[str, object]:
    import torch

    sys.path.insert(0, str(ROOT))
    from services.sandbox.shared.clock import GraphedCalls

    spec = importlib.util.spec_from_file_location("candidate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    model = module.ModelNew().to(device).eval()
    record: dict[str, object] = {"file": str(path.relative_to(ROOT)), "case": case, "calls": calls}

    def forward(inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        with torch.no_grad():
            out = model(*inputs)
        return [out] if isinstance(out, torch.Tensor) else list(out)

    def fresh() -> list[list[torch.Tensor]]:
        return [[torch.randn(*shape, device=device)] for _ in range(calls)]

    def error_of(outputs: list[list[torch.Tensor]], inputs: list[list[torch.Tensor]]) -> float:
        return max(float((o[0] - torch.relu(i[0])).abs().max()) for o, i in zip(outputs, inputs, strict=True))

    try:
        if case == "warm":
            eager = [fresh()[0] for _ in range(2)]
            record["eager_before_err"] = max(error_of([forward(x)], [x]) for x in eager)
        inputs = fresh()
        try:
            graphed = GraphedCalls(forward, inputs, device)
            record["judge_capture"] = "ok"
        except Exception as error:  # noqa: BLE001 - a failed capture is what the probe records
            record["judge_capture"] = "failed: " + _last_line(error)
            graphed = None
        torch.cuda.synchronize()
        if graphed is not None:
            errors = []
            for _ in range(3):
                values = fresh()
                graphed.refill(values)
                outputs = graphed.replay()
                torch.cuda.synchronize()
                errors.append(error_of(outputs, values))
            record["replay_err"] = errors
            record["distinct_outputs"] = len({o[0].data_ptr() for o in graphed.outputs})
        after = fresh()[:1]
        record["eager_after_err"] = error_of([forward(after[0])], after)
        torch.cuda.synchronize()
    except Exception as error:  # noqa: BLE001 - any failure is what the probe records
        record["exception"] = _last_line(error)
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", default=list(DEFAULT_FILES))
    parser.add_argument("--calls", type=int, default=8, help="Forward calls in the judge's graph.")
    parser.add_argument("--shape", default="16,4096", help="Input shape (l1_relu's built-in size).")
    parser.add_argument("--case", choices=("warm", "cold"), help="Run one case here (internal).")
    args = parser.parse_args()
    shape = tuple(int(s) for s in args.shape.split(","))
    if args.case:
        print(json.dumps(probe((ROOT / args.files[0]).resolve(), args.case, args.calls, shape)), flush=True)
        return 0
    for file in args.files:
        for case in ("warm", "cold"):
            done = subprocess.run(
                [sys.executable, __file__, file, "--case", case, "--calls", str(args.calls), "--shape", args.shape],
                capture_output=True,
                text=True,
                timeout=300,
            )
            line = done.stdout.strip().splitlines()[-1:] or [
                json.dumps({"file": file, "case": case, "exit": done.returncode, "stderr": done.stderr.strip()[-300:]})
            ]
            print(line[0], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
