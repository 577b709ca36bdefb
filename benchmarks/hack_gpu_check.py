"""Hack corpora judged on a GPU: does every hack get caught there, and what would it have earned?

    python benchmarks/hack_gpu_check.py --out OUT [--corpora hacks_gpu,hacks,legit]
        [--only NAME,...] [--time-all] [--timing-trials 20 --warmup-trials 3] [--timeout 900]

Starts a CUDA sandbox server on this machine and sends every candidate of the chosen corpora
(tests/sandbox/<corpus>/*.py, each declaring its task and expected outcome in its docstring)
through gRPC with timing on where the file asks for it (``--time-all``: for every file, as a
trainer would time every correct candidate). ``hacks_gpu`` holds the GPU-only patterns
(side streams, a switched current stream, late launches from a thread, patched CUDA events, a
persisting-L2 carve-out, CUDA graph replay, Inductor kernels, an illegal address, a device
assert); ``hacks`` and ``legit`` are the CPU corpora, here judged on the GPU.

Writes one JSON object per candidate to OUT/hack_gpu_check.jsonl and prints a table: verdict,
whether it matched its expectation (``gap`` marks a miss the corpus already documents),
speedup, coverage and the first hack reason or error. For each "no gain" hack the ratio of
its speedup to its honest twin's is printed last. Exit status 1 if any undocumented miss.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drkernel.logs import configure_logging
from drkernel.sections import LogSettings
from drkernel.v1 import common_pb2
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.client import LocalSandbox
from tests.sandbox import corpus

CORPORA = ROOT / "tests" / "sandbox"


def row(corpus_name: str, candidate: corpus.Candidate, response: corpus.Outcome) -> dict[str, object]:
    matched = corpus.matches(candidate, response)
    record: dict[str, object] = {
        "corpus": corpus_name,
        "name": candidate.name,
        "task": candidate.task,
        "expect": candidate.expect,
        "matched": matched,
        "documented_gap": candidate.gap,
    }
    if isinstance(response, pb.EvaluateResponse):
        record.update(
            verdict=pb.Verdict.Name(response.verdict),
            speedup=response.speedup,
            timing_valid=response.timing.valid,
            candidate_median_us=response.timing.candidate.median_us,
            reference_median_us=response.timing.reference.median_us,
            calls_per_trial=response.timing.calls_per_trial,
            cuda_graph=response.timing.cuda_graph,
            timing_method=response.timing.method,
            coverage=response.coverage,
            reward=response.reward,
            hack_reasons=list(response.hack_reasons),
            error=response.error[:600],
            evaluation_seconds=response.evaluation_seconds,
            device=response.device_name,
        )
    else:
        record.update(verdict="RPC_" + response.code().name, error=(response.details() or "")[:600])
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="Directory for hack_gpu_check.jsonl.")
    parser.add_argument(
        "--corpora", default="hacks_gpu,hacks,legit", help="Comma-separated directories under tests/sandbox."
    )
    parser.add_argument(
        "--only", default="", help="Comma-separated candidate names (file stems): judge only these, in every corpus."
    )
    parser.add_argument("--time-all", action="store_true", help="Time every candidate, not only 'timing: on' ones.")
    parser.add_argument("--timing-trials", type=int, default=20)
    parser.add_argument("--warmup-trials", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900.0, help="Seconds per evaluation.")
    args = parser.parse_args()
    configure_logging(LogSettings(level="warning", format="console"))
    args.out.mkdir(parents=True, exist_ok=True)
    sandbox = LocalSandbox(
        device="cuda",
        cpu_workers=1,
        default_timeout_seconds=args.timeout,
        max_timeout_seconds=max(args.timeout, 1800.0),
    )
    options = {
        "device": common_pb2.DEVICE_CUDA,
        "timing_trials": args.timing_trials,
        "warmup_trials": args.warmup_trials,
    }
    only = {name for name in args.only.split(",") if name}
    rows: list[dict[str, object]] = []
    written = threading.Lock()
    with (args.out / "hack_gpu_check.jsonl").open("w") as log:
        for corpus_name in args.corpora.split(","):
            candidates = {
                c.name: dataclasses.replace(c, timing=c.timing or args.time_all)
                for c in corpus.load(CORPORA / corpus_name)
                if c.name in only or not only
            }
            requests = [c.request(request_id=f"{corpus_name}/{c.name}", **options) for c in candidates.values()]

            def keep(
                request_id: str,
                outcome: corpus.Outcome,
                corpus_name: str = corpus_name,
                candidates: dict[str, corpus.Candidate] = candidates,
            ) -> None:
                record = row(corpus_name, candidates[request_id.split("/", 1)[1]], outcome)
                with written:  # as each finishes: a run cut by its time limit keeps what it judged
                    rows.append(record)
                    log.write(json.dumps(record) + "\n")
                    log.flush()
                print(f"{request_id}: {record['verdict']}", file=sys.stderr, flush=True)

            corpus.judge_all(sandbox.address, requests, timeout_seconds=args.timeout + 600, on_result=keep)
    sandbox.stop()
    print_table(rows)
    return 0 if all(r["matched"] or r["documented_gap"] for r in rows) else 1


def print_table(rows: list[dict[str, object]]) -> None:
    print(f"{'candidate':<42} {'expect':<14} {'verdict':<22} {'match':<5} {'speedup':>8} {'cover':>6}  reason / error")
    for r in rows:
        match = "yes" if r["matched"] else ("gap" if r["documented_gap"] else "NO")
        why = (r.get("hack_reasons") or [r.get("error") or ""])[0]  # type: ignore[index]
        print(
            f"{r['corpus']}/{r['name']:<{41 - len(str(r['corpus']))}} {r['expect']:<14} "
            f"{str(r['verdict']).removeprefix('VERDICT_'):<22} "
            f"{match:<5} {float(r.get('speedup') or 0):>8.3f} {float(r.get('coverage') or 0):>6.2f}  "
            f"{str(why).splitlines()[0][:90] if why else ''}"
        )
    by_name = {(r["corpus"], r["name"]): r for r in rows}
    for r in rows:
        if r["expect"] != "no gain":
            continue
        candidate = corpus.declared(CORPORA / str(r["corpus"]) / f"{r['name']}.py")
        twin = by_name.get((r["corpus"], Path(candidate.baseline).stem))
        if twin and twin.get("speedup"):
            speedup, twin_speedup = float(r.get("speedup") or 0), float(twin["speedup"])  # type: ignore[arg-type]
            ratio = speedup / twin_speedup
            print(
                f"no gain check: {r['name']} speedup {speedup:.3f} vs honest twin "
                f"{twin_speedup:.3f} (ratio {ratio:.3f}; at most 1.10 passes)"
            )


if __name__ == "__main__":
    sys.exit(main())
