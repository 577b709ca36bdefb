"""A generations file for `drkernel bench` from the KernelBench corpus of benchmarks/kernelbench:
for each chosen problem, sample 0 is a flawed variant (wrong, hacked, low precision, ...) at
turn 1 refined into our honest solution at turn 2, and sample 1 is another flawed variant (or
the same one again, which the bench judges once) at turn 1. So the report has honest, wrong and
hacked kernels, a turn curve (Fast@p rises from turn 1 to turn 2) and best-of-N.

    python benchmarks/kernelbench_generations.py --out generations.jsonl \
        [--problems level1/19,level2/12]

The tasks are named ``level<L>/<P>``: run the bench with ``--tasks KERNELBENCH_CHECKOUT``
(benchmarks/bench_gpu.sh does both).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from services.trainer.bench.generations import Generation, write_generations

CORPUS = ROOT / "benchmarks" / "kernelbench"
# Level 1 and 2 problems with a solution and a flawed variant whose full-size judging and
# baselines fit in about four minutes on an H100 (level2/59's 4 GiB of weights alone take
# ~100 s per evaluation there; the large RMSNorm and L1Norm inputs ~10-15 s).
DEFAULT_PROBLEMS = (
    "level1/19",
    "level1/23",
    "level1/1",
    "level2/12",
    "level2/63",
    "level2/76",
)
_ID = re.compile(r"^level(\d)/(\d+)$")


def _files(folder: Path, problem: str) -> list[Path]:
    match = _ID.match(problem)
    if match is None:
        raise SystemExit(f"not a KernelBench problem id (level<L>/<P>): {problem}")
    level, number = match.groups()
    return sorted((folder / f"level{level}").glob(f"{number}_*.py"))


def assemble(problems: list[str]) -> list[Generation]:
    """The generations of these problems (see the module's docstring)."""
    generations = []
    for problem in problems:
        honest = [p for p in _files(CORPUS / "solutions", problem) if "__" not in p.stem]
        flawed = _files(CORPUS / "flawed", problem)
        if len(honest) != 1 or not flawed:
            raise SystemExit(f"{problem}: needs one solution and a flawed variant in {CORPUS}")
        generations += [
            Generation(problem, 0, 1, flawed[0].read_text()),
            Generation(problem, 0, 2, honest[0].read_text()),
            Generation(problem, 1, 1, flawed[-1].read_text()),
        ]
    return generations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="The generations file to write.")
    parser.add_argument("--problems", default=",".join(DEFAULT_PROBLEMS), help="Comma-separated level<L>/<P>.")
    args = parser.parse_args()
    generations = assemble([p.strip() for p in args.problems.split(",") if p.strip()])
    write_generations(args.out, generations)
    print(f"wrote {len(generations)} generations to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
