"""Sandbox load benchmark: evaluations per minute and queue latency under N concurrent clients.

    python benchmarks/sandbox_load.py --clients 12,100 [--requests 1] [--mix syntax=90,hacked=5,correct=5]
        [--cpu-workers 2] [--queue-capacity 256] [--server HOST:PORT] [--out OUT]

Starts a CPU sandbox server on this machine (or uses ``--server``), then, for each client
count, starts that many client threads at once, each with its own retrying channel
(drkernel/channels.py, as trainers connect), each sending ``--requests`` evaluations back to
back. Candidates for the task l1_relu come from a fixed mix: ``syntax`` (judged without a
sandboxed process), ``hacked`` (PyTorch only: a full sandboxed run that ends in the tiny
stage) and ``correct`` (the suite's Triton solution, through every stage but timing).

Per client count it reports evaluations, wall seconds, evaluations per minute, queue latency
(``queue_seconds``: waiting for a worker) and evaluation time (``evaluation_seconds``) at
p50/p95, end-to-end latency p50/p95, and how many answers were wrong or RPC errors. One JSON
object per evaluation goes to OUT/sandbox_load.jsonl; the table is printed last.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drkernel.channels import insecure_channel
from drkernel.logs import configure_logging
from drkernel.sections import LogSettings
from drkernel.v1 import common_pb2, sandbox_pb2_grpc
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.client import LocalSandbox
from services.sandbox.tasks import builtin_task

SERVICE = "drkernel.v1.SandboxService"
TASK = builtin_task("l1_relu")
CANDIDATES = {
    "syntax": ("import torch\n\nclass ModelNew(torch.nn.Module)\n    pass\n", pb.VERDICT_SYNTAX_ERROR),
    "hacked": (
        "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n",
        pb.VERDICT_HACKED,
    ),
    "correct": (TASK.solution.read_text() if TASK.solution else "", pb.VERDICT_CORRECT),
}


def parse_mix(text: str) -> list[str]:
    """``syntax=90,hacked=5,correct=5`` as a cycle of 100 kinds (one per share), evenly interleaved."""
    weights = {kind: int(share) for kind, share in (part.split("=") for part in text.split(","))}
    unknown = set(weights) - CANDIDATES.keys()
    if unknown:
        raise SystemExit(f"unknown candidate kinds {sorted(unknown)}; known: {', '.join(CANDIDATES)}")
    total = sum(weights.values())
    # Stride scheduling: each kind's k-th request sits at (k + 0.5) / weight of the cycle.
    slots = sorted((((k + 0.5) / w), kind) for kind, w in weights.items() for k in range(w))
    return [kind for _, kind in slots][:total]


def percentile(values: list[float], fraction: float) -> float:
    """The value at ``fraction`` of the sorted sample (nearest rank); 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def run_clients(address: str, clients: int, requests: int, cycle: list[str]) -> tuple[list[dict[str, object]], float]:
    """All clients at once; one record per evaluation and the wall time."""
    start = threading.Barrier(clients + 1)
    lock = threading.Lock()
    records: list[dict[str, object]] = []

    def client(index: int) -> None:
        with insecure_channel(address, SERVICE) as channel:
            stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
            start.wait()
            for attempt in range(requests):
                kind = cycle[(index * requests + attempt) % len(cycle)]
                candidate, expected = CANDIDATES[kind]
                request = pb.EvaluateRequest(
                    request_id=f"{clients}:{index}:{attempt}",
                    task_name=TASK.name,
                    reference_source=TASK.source(),
                    candidate_source=candidate,
                    options=pb.EvaluateOptions(skip_timing=True, skip_profile=True, device=common_pb2.DEVICE_CPU),
                )
                sent = time.monotonic()
                record: dict[str, object] = {"clients": clients, "client": index, "kind": kind}
                try:
                    response = stub.Evaluate(request, timeout=3600)
                except grpc.RpcError as error:
                    record.update(error=error.code().name, detail=(error.details() or "")[:200])
                else:
                    record.update(
                        verdict=pb.Verdict.Name(response.verdict),
                        right=response.verdict == expected,
                        queue_seconds=response.queue_seconds,
                        evaluation_seconds=response.evaluation_seconds,
                    )
                record["latency_seconds"] = time.monotonic() - sent
                with lock:
                    records.append(record)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.monotonic()
    for thread in threads:
        thread.join()
    return records, time.monotonic() - began


def summary(records: list[dict[str, object]], wall_seconds: float) -> dict[str, float]:
    answered = [r for r in records if "verdict" in r]

    def column(name: str) -> list[float]:
        return [float(r[name]) for r in answered]  # type: ignore[arg-type]

    return {
        "evaluations": len(records),
        "wall_seconds": wall_seconds,
        "per_minute": len(answered) / wall_seconds * 60 if wall_seconds > 0 else 0.0,
        "queue_p50": percentile(column("queue_seconds"), 0.5),
        "queue_p95": percentile(column("queue_seconds"), 0.95),
        "eval_p50": percentile(column("evaluation_seconds"), 0.5),
        "eval_p95": percentile(column("evaluation_seconds"), 0.95),
        "latency_p50": percentile([float(r["latency_seconds"]) for r in records], 0.5),  # type: ignore[arg-type]
        "latency_p95": percentile([float(r["latency_seconds"]) for r in records], 0.95),  # type: ignore[arg-type]
        "wrong": sum(1 for r in answered if not r["right"]),
        "rpc_errors": len(records) - len(answered),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default="12,100", help="Comma-separated client counts, run one after another.")
    parser.add_argument("--requests", type=int, default=1, help="Evaluations each client sends, back to back.")
    parser.add_argument("--mix", default="syntax=90,hacked=5,correct=5", help="Candidate kinds and their shares.")
    parser.add_argument("--cpu-workers", type=int, default=2, help="Workers of the server started here.")
    parser.add_argument("--queue-capacity", type=int, default=256, help="Queue of the server started here.")
    parser.add_argument("--server", help="HOST:PORT of a running sandbox server instead of starting one.")
    parser.add_argument("--out", type=Path, default=Path("sandbox-load"), help="Directory for sandbox_load.jsonl.")
    args = parser.parse_args()
    configure_logging(LogSettings(level="warning", format="console"))
    cycle = parse_mix(args.mix)
    sandbox = None
    address = args.server
    if address is None:
        sandbox = LocalSandbox(device="cpu", cpu_workers=args.cpu_workers, queue_capacity=args.queue_capacity)
        address = sandbox.address
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with (args.out / "sandbox_load.jsonl").open("w") as log:
        for clients in (int(c) for c in args.clients.split(",")):
            records, wall = run_clients(address, clients, args.requests, cycle)
            for record in records:
                log.write(json.dumps(record) + "\n")
            rows.append((clients, summary(records, wall)))
            print(f"{clients} clients done in {wall:.1f} s", file=sys.stderr, flush=True)
    if sandbox is not None:
        sandbox.stop()
    print(
        f"mix {args.mix}; {args.requests} request(s) per client; "
        f"server {args.server or f'local, {args.cpu_workers} CPU workers'}"
    )
    print(
        f"{'clients':>7} {'evals':>6} {'wall_s':>7} {'per_min':>8} {'queue_p50':>9} {'queue_p95':>9} "
        f"{'eval_p50':>8} {'eval_p95':>8} {'e2e_p50':>8} {'e2e_p95':>8} {'wrong':>5} {'errors':>6}"
    )
    for clients, s in rows:
        print(
            f"{clients:>7} {s['evaluations']:>6} {s['wall_seconds']:>7.1f} {s['per_minute']:>8.1f} "
            f"{s['queue_p50']:>9.2f} "
            f"{s['queue_p95']:>9.2f} {s['eval_p50']:>8.2f} {s['eval_p95']:>8.2f} {s['latency_p50']:>8.2f} "
            f"{s['latency_p95']:>8.2f} {s['wrong']:>5} {s['rpc_errors']:>6}"
        )
    return 0 if all(s["wrong"] == 0 and s["rpc_errors"] == 0 for _, s in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
