#!/usr/bin/env bash
# Every GPU measurement recorded in docs/BENCHMARKS.md, in one command on a CUDA machine:
#   bash benchmarks/run_gpu.sh [sandbox|extras|all] OUT_DIR [KERNELBENCH_CHECKOUT]
# sandbox: built-in suite with timing, speedup stability over 10 repeats, KernelBench
#          level-1 problems (files unchanged) with our solutions, cold and warm.
# extras:  profiler (coverage of lazy vs fused, overhead), GPU-only hack candidates, policy
#          sampling throughput and log-prob gap.
# Needs the project's Python dependencies and bubblewrap on PATH; without them the sandbox
# still runs but reports its isolation as missing.
set -uo pipefail
part=${1:-all}; out=${2:?usage: run_gpu.sh [sandbox|extras|all] OUT_DIR [KERNELBENCH]}; kb=${3:-}
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
{ nvidia-smi -L; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)"; } | tee "$out/environment.txt"
if [[ $part == sandbox || $part == all ]]; then
  python3 benchmarks/sandbox_bench.py --device cuda --out "$out" --repeats 10 \
    --repeat-tasks l1_relu,l1_softmax,l2_gemm_bias_relu ${kb:+--kernelbench "$kb"} 2>"$out/sandbox.log" | tee "$out/sandbox_table.txt"
fi
if [[ $part == extras || $part == all ]]; then
  python3 benchmarks/profiler_bench.py --device cuda --out "$out" 2>"$out/profiler.log" | tee "$out/profiler_table.txt"
  [[ -f benchmarks/hack_gpu_check.py ]] && python3 benchmarks/hack_gpu_check.py --out "$out" 2>"$out/hacks.log" | tee "$out/hacks_table.txt"
  python3 -m benchmarks.policy_bench gpu --out "$out/policy.jsonl" 2>"$out/policy.log" | tail -8 | tee "$out/policy_table.txt"
fi
