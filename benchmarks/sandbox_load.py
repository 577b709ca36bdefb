"""Sandbox load benchmark: evaluations per minute and queue latency under N concurrent clients,
and how throughput grows with the number of sandbox servers behind one round-robin client.

    python benchmarks/sandbox_load.py --clients 12,100 [--requests 1] [--mix syntax=90,hacked=5,correct=5]
        [--servers 1,2,3] [--cpu-workers 2] [--queue-capacity 256] [--server TARGET] [--out OUT]

For each count K in ``--servers``, starts K CPU sandbox servers on this machine (or uses
``--server``: one address, ``dns:///name:port`` or a comma-separated list), then, for each client
count N, starts N client threads at once, all sharing one channel from drkernel/channels.py
(round-robin over the K servers, TLS and token as the settings say: a trainer's SandboxClient
connects the same way), each sending ``--requests`` evaluations back to back. Candidates for the
task l1_relu come from a fixed mix: ``syntax`` (a syntax error, judged before any stage runs),
``hacked`` (PyTorch only: a full sandboxed run that ends in the tiny stage), ``correct`` (the
suite's Triton solution, through every stage but timing) and ``slow`` (``hacked`` after a 5 s
sleep at import: the worker waits while the host idles, as it does for a GPU evaluation; it
shows replicas scaling on a host with few cores, where CPU-bound candidates cannot).

Per (servers, clients) it reports evaluations, wall seconds, evaluations per minute, queue
latency (``queue_seconds``: waiting for a worker) and evaluation time (``evaluation_seconds``)
at p50/p95, end-to-end latency p50/p95, how many answers were wrong or RPC errors, and how many
evaluations each server ran (its workers' counts from Describe). One JSON object per
evaluation goes to OUT/sandbox_load.jsonl; the table is printed last.
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

from drkernel.channels import open_channel
from drkernel.config import load_settings
from drkernel.logs import configure_logging
from drkernel.sections import LogSettings, SecuritySettings
from drkernel.v1 import common_pb2, sandbox_pb2_grpc
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.client import LocalSandbox
from services.sandbox.tasks import builtin_task

SERVICE = "drkernel.v1.SandboxService"
TASK = builtin_task("l1_relu")
_TORCH_ONLY = "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
CANDIDATES = {
    "syntax": ("import torch\n\nclass ModelNew(torch.nn.Module)\n    pass\n", pb.VERDICT_SYNTAX_ERROR),
    "hacked": (f"import torch\n\n\n{_TORCH_ONLY}", pb.VERDICT_HACKED),
    "correct": (TASK.solution.read_text() if TASK.solution else "", pb.VERDICT_CORRECT),
    "slow": (f"import time\n\nimport torch\n\ntime.sleep(5.0)\n\n\n{_TORCH_ONLY}", pb.VERDICT_HACKED),
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


def run_clients(
    target: str, security: SecuritySettings, clients: int, requests: int, cycle: list[str]
) -> tuple[list[dict[str, object]], float]:
    """All clients at once over one channel to ``target``; one record per evaluation and the
    wall time."""
    start = threading.Barrier(clients + 1)
    lock = threading.Lock()
    records: list[dict[str, object]] = []

    def client(stub: sandbox_pb2_grpc.SandboxServiceStub, index: int) -> None:
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

    with open_channel(target, SERVICE, security) as channel:
        stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
        grpc.channel_ready_future(channel).result(timeout=60)
        threads = [threading.Thread(target=client, args=(stub, i)) for i in range(clients)]
        for thread in threads:
            thread.start()
        start.wait()
        began = time.monotonic()
        for thread in threads:
            thread.join()
        return records, time.monotonic() - began


def served(addresses: list[str], security: SecuritySettings) -> list[int]:
    """Evaluations each server has run so far (the sum of its workers' counts, from Describe)."""
    counts = []
    for address in addresses:
        with open_channel(address, SERVICE, security) as channel:
            described = sandbox_pb2_grpc.SandboxServiceStub(channel).Describe(pb.DescribeRequest(), timeout=60)
        counts.append(sum(worker.evaluations for worker in described.workers))
    return counts


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
    parser.add_argument("--servers", default="1", help="Comma-separated counts of servers started here.")
    parser.add_argument("--cpu-workers", type=int, default=2, help="Workers of each server started here.")
    parser.add_argument("--queue-capacity", type=int, default=256, help="Queue of each server started here.")
    parser.add_argument("--server", help="A running sandbox (address, dns:/// name or list) instead of starting any.")
    parser.add_argument("--out", type=Path, default=Path("sandbox-load"), help="Directory for sandbox_load.jsonl.")
    args = parser.parse_args()
    configure_logging(LogSettings(level="warning", format="console"))
    security = load_settings().security  # DRKERNEL_CONFIG or DRKERNEL_SECURITY__...; servers started here too
    cycle = parse_mix(args.mix)
    client_counts = [int(c) for c in args.clients.split(",")]
    server_counts = [0] if args.server else [int(k) for k in args.servers.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with (args.out / "sandbox_load.jsonl").open("w") as log:
        for count in server_counts:
            sandboxes = [
                LocalSandbox(device="cpu", cpu_workers=args.cpu_workers, queue_capacity=args.queue_capacity)
                for _ in range(count)
            ]
            addresses = [sandbox.address for sandbox in sandboxes]
            try:
                for clients in client_counts:
                    before = served(addresses, security)
                    records, wall = run_clients(
                        args.server or ",".join(addresses), security, clients, args.requests, cycle
                    )
                    per_server = [b - a for a, b in zip(before, served(addresses, security), strict=True)]
                    for record in records:
                        log.write(json.dumps({"servers": count, **record}) + "\n")
                    rows.append((count, clients, summary(records, wall), per_server))
                    print(f"{count} server(s), {clients} clients done in {wall:.1f} s", file=sys.stderr, flush=True)
            finally:
                for sandbox in sandboxes:
                    sandbox.stop()
    print(
        f"mix {args.mix}; {args.requests} request(s) per client; "
        f"servers {args.server or f'local, {args.cpu_workers} CPU worker(s) each'}"
    )
    print(
        f"{'servers':>7} {'clients':>7} {'evals':>6} {'wall_s':>7} {'per_min':>8} {'queue_p50':>9} {'queue_p95':>9} "
        f"{'eval_p50':>8} {'eval_p95':>8} {'e2e_p50':>8} {'e2e_p95':>8} {'wrong':>5} {'errors':>6}  per server"
    )
    for count, clients, s, per_server in rows:
        print(
            f"{count or '-':>7} {clients:>7} {s['evaluations']:>6} {s['wall_seconds']:>7.1f} {s['per_minute']:>8.1f} "
            f"{s['queue_p50']:>9.2f} {s['queue_p95']:>9.2f} {s['eval_p50']:>8.2f} {s['eval_p95']:>8.2f} "
            f"{s['latency_p50']:>8.2f} {s['latency_p95']:>8.2f} {s['wrong']:>5} {s['rpc_errors']:>6}  "
            f"{'/'.join(map(str, per_server)) or '-'}"
        )
    return 0 if all(s["wrong"] == 0 and s["rpc_errors"] == 0 for _, _, s, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
