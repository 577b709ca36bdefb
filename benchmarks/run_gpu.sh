#!/usr/bin/env bash
# Every GPU measurement recorded in docs/BENCHMARKS.md, on a CUDA machine:
#   bash benchmarks/run_gpu.sh OUT_DIR KERNELBENCH_CHECKOUT [suite] [stability] [extras]
# (no part named: all three)
# suite:     every built-in task's reference solution, timed.
# stability: speedup over 10 repeated evaluations (a fresh process each), and KernelBench
#            level-1 problems (files unchanged) with our solutions, cold and warm.
# extras:    profiler (coverage of lazy vs fused, overhead), GPU-only hack candidates, policy
#            sampling throughput and log-prob gap.
# judge:     issue 8's acceptance: GPU hack and legitimate corpora, honest full-size KernelBench
#            solutions cold and warm (KB_PROBLEMS), speedup stability of launch-bound tasks,
#            CUPTI start-up probe.
# parity:    benchmarks/kernelbench_parity.py: drkernel and KernelBench's own harness on the
#            same candidates (PARITY_ARGS adds options, e.g. --problems).
# Needs the project's Python dependencies and bubblewrap on PATH; without bubblewrap the
# sandbox still runs but reports its isolation as missing.
set -uo pipefail
out=${1:?usage: run_gpu.sh OUT_DIR KERNELBENCH_CHECKOUT [suite] [stability] [extras] [judge] [parity]}; kb=${2:?}; shift 2
parts=${*:-suite stability extras}
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
{ nvidia-smi -L; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)"; git log -1 --format='commit %H' 2>/dev/null; } | tee "$out/environment.txt"
for part in $parts; do
  case $part in
    suite) python3 benchmarks/sandbox_bench.py --device cuda --out "$out/suite" 2>"$out/suite.log" | tee "$out/suite_table.txt" ;;
    stability) timeout "${STABILITY_SECONDS:-1800}" python3 benchmarks/sandbox_bench.py --device cuda --out "$out/stability" \
                 --tasks none --repeats 10 --repeat-tasks "${REPEAT_TASKS:-l1_relu,l1_softmax,l2_gemm_bias_relu}" \
                 --kernelbench "$kb" 2>"$out/stability.log" | tee "$out/stability_table.txt" ;;
    extras)
      timeout "${PROFILER_SECONDS:-900}" python3 benchmarks/profiler_bench.py --device cuda --out "$out/profiler" --repeats 2 \
        2>"$out/profiler.log" | tee "$out/profiler_table.txt"
      timeout "${HACKS_SECONDS:-1800}" python3 benchmarks/hack_gpu_check.py --out "$out/hacks" --corpora "${HACK_CORPORA:-hacks_gpu,hacks,legit}" \
        2>"$out/hacks.log" | tee "$out/hacks_table.txt"
      timeout "${POLICY_SECONDS:-900}" python3 -m benchmarks.policy_bench gpu --out "$out/policy.jsonl" 2>"$out/policy.log" | tail -8 | tee "$out/policy_table.txt" ;;
    judge)
      for order in before-context after-context; do python3 benchmarks/cupti_probe.py $order; done | tee "$out/cupti_probe.jsonl"
      timeout "${KB_SECONDS:-240}" python3 benchmarks/sandbox_bench.py --device cuda --out "$out/kb" --tasks none --kernelbench "$kb" \
        --kernelbench-problems "${KB_PROBLEMS:-level1/19_ReLU,level1/36_RMSNorm_,level2/12_Gemm_Multiply_LeakyReLU}" \
        2>"$out/kb.log" | tee "$out/kb_table.txt"
      timeout "${HACKS_SECONDS:-420}" python3 benchmarks/hack_gpu_check.py --out "$out/hacks" --corpora "${HACK_CORPORA:-hacks_gpu,legit}" \
        2>"$out/hacks.log" | tee "$out/hacks_table.txt"
      timeout "${STABILITY_SECONDS:-300}" python3 benchmarks/sandbox_bench.py --device cuda --out "$out/stability" --tasks none \
        --repeats "${REPEATS:-10}" --repeat-tasks "${REPEAT_TASKS:-l1_relu,l2_gemm_bias_relu}" 2>"$out/stability.log" | tee "$out/stability_table.txt" ;;
    parity)
      timeout "${PARITY_SECONDS:-1800}" python3 benchmarks/kernelbench_parity.py --kernelbench "$kb" --out "$out/parity" --device cuda \
        ${PARITY_ARGS:-} 2>"$out/parity.log" | tee "$out/parity_table.txt" ;;
    *) echo "unknown part: $part" >&2; exit 2 ;;
  esac
done
