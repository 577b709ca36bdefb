#!/usr/bin/env bash
# Issue 12 on a GPU: `drkernel bench` over KernelBench level-1 and level-2 problems that have our
# solutions (benchmarks/kernelbench), judging a generations file assembled from them (honest,
# wrong and hacked kernels over two turns and two samples: benchmarks/kernelbench_generations.py)
# with the eager and torch.compile baselines timed in the same run on the same GPU; then the same
# command again, which must judge nothing (the results cache).
#   bash benchmarks/bench_gpu.sh OUT_DIR KERNELBENCH_CHECKOUT [PROBLEMS]
# PROBLEMS: comma-separated level<L>/<P> (default: kernelbench_generations.DEFAULT_PROBLEMS, about
# four minutes on an H100). Writes OUT_DIR/environment.txt, generations.jsonl, bench/ (report.json,
# report.md, the plots, cache.jsonl), summary.json, summary_rerun.json and bench.log.
# Needs the project's Python dependencies (on a bare lent machine: `. benchmarks/gpu_setup.sh`).
set -uo pipefail
out=${1:?usage: bench_gpu.sh OUT_DIR KERNELBENCH_CHECKOUT [PROBLEMS]}; kb=${2:?usage: bench_gpu.sh OUT_DIR KERNELBENCH_CHECKOUT [PROBLEMS]}
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
problems=${3:-$(python3 -c 'from benchmarks.kernelbench_generations import DEFAULT_PROBLEMS; print(",".join(DEFAULT_PROBLEMS))')}
{ nvidia-smi -L; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)"
  git log -1 --format='commit %H' 2>/dev/null; echo "problems $problems"; } | tee "$out/environment.txt"
python3 benchmarks/kernelbench_generations.py --out "$out/generations.jsonl" --problems "$problems" || exit 1
run() {  # $1: the summary file, $2: the time limit in seconds; prints the wall-clock seconds
  local start=$(date +%s)
  timeout "$2" python3 -m drkernel bench --generations "$out/generations.jsonl" --tasks "$kb" \
    --problems "$problems" --device cuda --baselines on --out "$out/bench" --json > "$1" 2>> "$out/bench.log"
  local status=$?
  echo "$(basename "$1"): exit $status after $(( $(date +%s) - start )) s" | tee -a "$out/environment.txt"
}
# A first run cut off by its limit leaves its judged kernels in the cache: the rerun resumes it.
run "$out/summary.json" "${BENCH_SECONDS:-420}"
run "$out/summary_rerun.json" "${RERUN_SECONDS:-150}"
cat "$out/bench/report.md"
