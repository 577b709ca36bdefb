#!/usr/bin/env bash
# Issue 8's acceptance on one GPU: every measurement in one script, in parts that each fit one
# 10-minute call of a lent machine (run them one after the other, or all at once where time allows):
#   . benchmarks/gpu_setup.sh && bash benchmarks/issue8_finish.sh OUT_DIR KERNELBENCH_CHECKOUT [PART...]
# Parts (default: all, in this order; seconds on an H100):
#   gpu        pytest -m gpu (the GPU tests, outside tests/deploy)                       ~215 s
#   stability  speedup CV over 10 evaluations of l2_gemm_bias_relu and l1_relu          ~150 s
#   latency    full-size KernelBench 19_ReLU and 36_RMSNorm_, cold then 5 warm each     ~75 s
#   hacks      the hacks_gpu corpus (every file caught as its docstring declares)       ~75 s
#   legit1     the first half of the legit corpus, every file timed                     ~210 s
#   legit2     the second half                                                          ~190 s
#   hacks1     the first half of the CPU hack corpus (tests/sandbox/hacks), judged here  ~270 s
#   hacks2     its second half
#   parity1    drkernel's side of the KernelBench parity, first 15 problems             ~245 s
#   parity2    the other 15                                                             ~260 s
# The parity parts take KernelBench's own results from KB_REPORT (default: the last full
# report in docs/data, with drkernel's results left out so that they are judged again).
# A short table of each part is printed as it ends; logs and JSON go under OUT_DIR/PART.
set -uo pipefail
out=${1:?usage: issue8_finish.sh OUT_DIR KERNELBENCH_CHECKOUT [PART...]}; kb=${2:?}
shift 2
parts=("$@")
(( ${#parts[@]} )) || parts=(gpu stability latency hacks legit1 legit2 parity1 parity2)
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
mkdir -p "$out"
KB_REPORT=${KB_REPORT:-docs/data/kernelbench_parity_2026-11-26.json}

{
  date -u +'date %Y-%m-%dT%H:%M:%SZ'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
} | tee "$out/environment.txt"

corpus_half() {  # CORPUS HALF: the corpus's files, sorted, first (1) or second (2) half, comma-separated
  local files; files=$(ls "tests/sandbox/$1"/*.py | xargs -n1 basename | sed 's/\.py$//' | sort)
  local half=$(( ($(echo "$files" | wc -l) + 1) / 2 ))
  if [[ $2 == 1 ]]; then echo "$files" | head -n "$half"; else echo "$files" | tail -n +"$((half + 1))"; fi | paste -sd,
}

parity_half() {  # the parity report's problems, sorted, first (1) or second (2) half
  python3 - "$KB_REPORT" "$1" <<'EOF'
import json, sys
problems = sorted({row["problem"] for row in json.load(open(sys.argv[1]))["rows"]})
half = (len(problems) + 1) // 2
print(",".join(problems[:half] if sys.argv[2] == "1" else problems[half:]))
EOF
}

kernelbench_only() {  # KB_REPORT without drkernel's results, so that the parity run judges them
  python3 - "$KB_REPORT" "$1" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
for row in report["rows"]:
    row["drkernel"] = {}
json.dump(report, open(sys.argv[2], "w"))
EOF
}

summarize() {  # PART: its short table
  python3 - "$out" "$1" <<'EOF'
import json, statistics, sys
from pathlib import Path
out, part = Path(sys.argv[1]), sys.argv[2]
def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
if part == "stability":
    results = rows(out / part / "sandbox.jsonl")
    for name in sorted({r["name"] for r in results}):
        speedups = [r["speedup"] for r in results if r["name"] == name and r["verdict"] == "VERDICT_CORRECT"]
        if len(speedups) > 1:
            cv = statistics.stdev(speedups) / statistics.mean(speedups)
            print(f"{name:<20} n={len(speedups)} mean={statistics.mean(speedups):.3f} CV={cv:.2%}")
elif part == "latency":
    for r in rows(out / part / "sandbox.jsonl"):
        print(f"{r['group']:<8} {r['name']:<22} {r['verdict'][8:]:<10} {r['evaluation_seconds']:5.2f} s  {r['speedup']:.3f}x")
elif part in ("hacks", "legit1", "legit2", "hacks1", "hacks2"):
    results = rows(out / part / "hack_gpu_check.jsonl")
    missed = [r["name"] for r in results if not r["matched"]]
    print(f"{part}: {len(results)} judged, {len(missed)} not as declared {missed}")
    if part.startswith("hacks"):
        paid = [f"{r['name']} ({r.get('coverage', 0):.2f}, {r.get('reward', 0):.2f})" for r in results
                if r["verdict"] == "VERDICT_CORRECT" and r.get("coverage", 0) >= 0.1]
        print(f"{part}: CORRECT with coverage >= 0.1 (coverage, reward): {paid}")
EOF
}

for part in "${parts[@]}"; do
  echo "== $(date -u +%H:%M:%S) $part"
  mkdir -p "$out/$part"
  status=0
  case $part in
    gpu) python3 -m pytest -q -p no:cacheprovider -m gpu --ignore=tests/deploy -rs > "$out/gpu/pytest.log" 2>&1 || status=$?
         tail -n 3 "$out/gpu/pytest.log" ;;
    stability) python3 benchmarks/sandbox_bench.py --device cuda --out "$out/stability" --tasks none --repeats 10 \
                 --repeat-tasks l2_gemm_bias_relu,l1_relu > "$out/stability/run.log" 2>&1 || status=$? ;;
    latency) python3 benchmarks/sandbox_bench.py --device cuda --out "$out/latency" --tasks none --kernelbench "$kb" \
               --kernelbench-problems level1/19_ReLU,level1/36_RMSNorm_ --warm-runs 5 > "$out/latency/run.log" 2>&1 \
               || status=$? ;;
    hacks) python3 benchmarks/hack_gpu_check.py --out "$out/hacks" --corpora hacks_gpu > "$out/hacks/run.log" 2>&1 \
             || status=$? ;;
    legit1|legit2) python3 benchmarks/hack_gpu_check.py --out "$out/$part" --corpora legit --time-all \
                     --only "$(corpus_half legit "${part: -1}")" > "$out/$part/run.log" 2>&1 || status=$? ;;
    hacks1|hacks2) python3 benchmarks/hack_gpu_check.py --out "$out/$part" --corpora hacks \
                     --only "$(corpus_half hacks "${part: -1}")" > "$out/$part/run.log" 2>&1 || status=$? ;;
    parity1|parity2)
      kernelbench_only "$out/$part/kernelbench_only.json"
      python3 benchmarks/kernelbench_parity.py --kernelbench "$kb" --out "$out/$part" --device cuda --judges drkernel \
        --problems "$(parity_half "${part: -1}")" --merge "$out/$part/kernelbench_only.json" \
        > "$out/$part/table.txt" 2> "$out/$part/run.log" || status=$?
      tail -n 1 "$out/$part/table.txt" ;;
    *) echo "unknown part $part (gpu stability latency hacks legit1 legit2 hacks1 hacks2 parity1 parity2)"; exit 2 ;;
  esac
  echo "exit $status"
  summarize "$part"
done
