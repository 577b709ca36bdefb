"""A stand-in for `drkernel train` that keeps its contract with the trainer service, fast:

    fake_train.py --config FILE --out DIR [--steps N]
    fake_train.py --resume DIR [--steps N]

It writes DIR/config.yaml, appends one JSON line per step to DIR/metrics.jsonl, writes a
complete checkpoint (renamed into place) as DIR/checkpoints/step_N with an hf/ export after
every step and keeps the newest two, resumes from the newest, and on SIGTERM finishes its
step, checkpoints and exits 0. Under torchrun every rank steps and only rank 0 writes. The run
config's `name` picks what else it does:

- `slow`: each step takes 0.2 s instead of 0.02 s (runs to stop);
- `fail-at-K`: fails at step K with one line on stderr and exit code 1;
- `torn`: writes a malformed line, and each line in two halves with a pause between;
  at the end a half line that it never finishes;
- `stubborn`: ignores SIGTERM, and starts a child in a session of its own (as torchrun
  starts its workers) whose pid it writes to DIR/child.pid.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml


def checkpoint(out: Path, step: int) -> None:
    """A complete checkpoint appears at once: written aside, then renamed into place."""
    root = out / "checkpoints"
    partial = root / f".step_{step}.partial"
    (partial / "hf").mkdir(parents=True)
    (partial / "state.bin").write_bytes(b"\0" * 1000)
    (partial / "hf" / "model.safetensors").write_bytes(b"\1" * 500)
    os.replace(partial, root / f"step_{step}")
    for old in sorted(root.glob("step_*"), key=lambda p: int(p.name.removeprefix("step_")))[:-2]:
        shutil.rmtree(old)


def metrics_line(step: int) -> str:
    return (
        json.dumps(
            {
                "step": step,
                "reward_mean": step / 10,
                "correct_rate": 0.5,
                "hacked_rate": 0.01,
                "mrs_rejected_rate": 0.02,
                "prs_rejected_rate": 0.03,
                "veto_rate": 0.04,
                "logprob_mismatch": 0.001,
                "weights_version": step,
                "seconds_generating": 1.0,
                "seconds_evaluating": 2.0,
                "seconds_logprobs": 0.5,
                "seconds_updating": 0.25,
                "seconds_syncing": 0.125,
                "seconds_step": 4.0,
                "reward_turn_1": step / 20,
                "note": "not a number",
                "converged": False,
            }
        )
        + "\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=Path)
    parser.add_argument("--resume", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--steps", type=int)
    args = parser.parse_args()
    out: Path = args.resume or args.out
    config = yaml.safe_load(((args.resume / "config.yaml") if args.resume else args.config).read_text()) or {}
    if args.steps:
        config["steps"] = args.steps
    lead = os.environ.get("RANK", "0") == "0"
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    if lead:
        (out / "config.yaml").write_text(yaml.safe_dump(config))
    name, steps = config.get("name", "run"), config.get("steps", 100)
    done = (
        max((int(p.name.removeprefix("step_")) for p in (out / "checkpoints").glob("step_*")), default=0)
        if args.resume
        else 0
    )

    stop = []
    if name == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
        (out / "child.pid").write_text(str(child.pid))
    else:
        signal.signal(signal.SIGTERM, lambda *_: stop.append(True))

    with (out / "metrics.jsonl" if lead else Path(os.devnull)).open("a") as metrics:
        if name == "torn":
            metrics.write("{not json\n")
        for step in range(done + 1, steps + 1):
            time.sleep(0.2 if name in ("slow", "stubborn") else 0.02)
            if name == f"fail-at-{step}":
                print(f"drkernel: fake failure at step {step}", file=sys.stderr)
                return 1
            line = metrics_line(step)
            if name == "torn":
                metrics.write(line[:20])
                metrics.flush()
                time.sleep(0.3)
                line = line[20:]
            metrics.write(line)
            metrics.flush()
            if lead:
                checkpoint(out, step)
            if stop:
                break
        if name == "torn":
            metrics.write('{"step": 99, "rew')
    return 0


if __name__ == "__main__":
    sys.exit(main())
