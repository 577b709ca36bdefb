#!/usr/bin/env bash
# Issue 8, round 2: the GPU measurements still missing, in one call of at most SECONDS (default 555):
#   . benchmarks/gpu_setup.sh && bash benchmarks/issue8_finish.sh OUT_DIR KERNELBENCH_CHECKOUT
# 1. the whole `legit` corpus judged on the GPU (benchmarks/hack_gpu_check.py), verdicts printed;
# 2. benchmarks/cuda_graph_nesting_probe.py: a candidate's own CUDA graph replayed inside the
#    judge's timing capture (services/sandbox/shared/clock.py GraphedCalls), outside the sandbox;
# 3. drkernel's side of the KernelBench parity (--judges drkernel) for the candidates that
#    docs/data/kernelbench_parity_2026-11-24.json lacks, the slow level2/59 one last; the report
#    is saved after every evaluation, so a cut run keeps what it judged;
# 4. a short table of all of it, last.
# Every step has its own time limit, taken from what is left of SECONDS.
set -uo pipefail
out=${1:?usage: issue8_finish.sh OUT_DIR KERNELBENCH_CHECKOUT}; kb=${2:?}
deadline=$(( ${START_EPOCH:-$(date +%s)} + ${SECONDS_TOTAL:-555} ))
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
left() { echo $(( deadline - $(date +%s) - ${1:-0} )); }
limit() { local want=$1 reserve=$2 l; l=$(left "$reserve"); (( l < want )) && want=$l; (( want < 1 )) && want=1; echo "$want"; }
step() { echo "== $(date -u +%H:%M:%S) $* ($(left) s left)"; }

PARITY_CANDIDATES=${PARITY_CANDIDATES:-level2/63_Gemm_ReLU_Divide,level2/63_Gemm_ReLU_Divide__hack,\
level2/70_Gemm_Sigmoid_Scaling_ResidualAdd,level2/70_Gemm_Sigmoid_Scaling_ResidualAdd__wrong,\
level2/76_Gemm_Add_ReLU,level2/76_Gemm_Add_ReLU__wrong,level2/86_Matmul_Divide_GELU,level2/86_Matmul_Divide_GELU__lowprec,\
level1/36_RMSNorm___hardcoded#kernelbench,level1/38_L1Norm___hardcoded#kernelbench,\
level2/59_Matmul_Swish_Scaling__nomask}

{
  step environment
  date -u +'date %Y-%m-%dT%H:%M:%SZ'
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader
  python3 -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)"
  bwrap --version 2>&1 | head -1
  nproc
} 2>&1 | tee "$out/run.log"

{
  t=$(limit 230 300); step "legit corpus on the GPU, limit $t s"
  timeout -k 5 "$t" python3 benchmarks/hack_gpu_check.py --out "$out/legit" --corpora legit 2>"$out/legit.log"
  echo "hack_gpu_check exit $?"

  t=$(limit 90 260); step "CUDA graph nesting probe, limit $t s"
  timeout -k 5 "$t" python3 benchmarks/cuda_graph_nesting_probe.py | tee "$out/probe.jsonl"
  echo "probe exit $?"

  t=$(limit 600 12); step "parity, drkernel side, limit $t s"
  timeout -k 5 "$t" python3 benchmarks/kernelbench_parity.py --kernelbench "$kb" --out "$out/parity" \
    --device cuda --judges drkernel --candidates "$PARITY_CANDIDATES" 2>"$out/parity.log"
  echo "kernelbench_parity exit $?"
  grep -v 'drkernel: ' "$out/parity.log" | tail -20

  step summary
  python3 - "$out" <<'EOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
print("-- legit corpus (GPU) --")
legit = out / "legit" / "hack_gpu_check.jsonl"
rows = [json.loads(line) for line in legit.read_text().splitlines()] if legit.exists() else []
for r in sorted(rows, key=lambda r: r["name"]):
    why = (r.get("hack_reasons") or [r.get("error") or ""])[0].splitlines()
    timing = f"{r.get('speedup', 0):.3f}x graph={r.get('cuda_graph')} calls={r.get('calls_per_trial')}" if r.get("speedup") else ""
    print(f"{r['name']:<30} {r['verdict'].removeprefix('VERDICT_'):<14} {'ok' if r['matched'] else 'MISS'} "
          f"{r.get('evaluation_seconds', 0):5.1f}s {timing} {why[0][:150] if why else ''}")
print(f"{len(rows)} legit files judged, {sum(not r['matched'] for r in rows)} not as expected")
print("-- parity, drkernel (GPU) --")
report = out / "parity" / "kernelbench_parity.json"
doc = json.loads(report.read_text()) if report.exists() else {"rows": []}
for r in doc["rows"]:
    for profile, d in r["drkernel"].items():
        why = (d["hack_reasons"] or [d["error"]] or [""])[0].splitlines()
        expect = r["expected_correct"][profile]
        print(f"{r['candidate']:<46} {profile:<11} {d['verdict'].removeprefix('VERDICT_'):<18} expect "
              f"{'-' if expect is None else ('correct' if expect else 'not')} {d['evaluation_seconds']:6.1f}s "
              f"wall {d['wall_seconds']:6.1f}s {d['speedup']:.3f}x {why[0][:110] if why else ''}")
    if not r["drkernel"]:
        print(f"{r['candidate']:<46} not judged (time limit)")
EOF
} 2>&1 | tee -a "$out/run.log"
