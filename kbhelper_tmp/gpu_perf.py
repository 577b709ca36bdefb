"""Realistic-size timings + CPU launch overhead of the built-in solutions (throwaway)."""
import os, sys, json, time
sys.path.insert(0, os.getcwd()); sys.path.insert(0, "kbhelper_tmp")
import torch
from triton.testing import do_bench
import gpu_builtin as gb
from services.sandbox.task_source import with_constants

REAL = {
    "l2_gemm_bias_relu": dict(batch_size=1024, in_features=4096, out_features=4096),
    "l2_gemm_gelu_scale": dict(batch_size=1024, in_features=4096, out_features=4096),
    "l2_gemm_swish_bias": dict(batch_size=1024, in_features=4096, out_features=4096),
    "l2_gemm_sigmoid_rowsum": dict(batch_size=1024, input_size=4096, hidden_size=4096),
    "l2_gemm_scale_softmax": dict(batch_size=1024, in_features=4096, out_features=256),
    "l2_conv2d_bn_relu": dict(batch_size=32, in_channels=64, out_channels=128, height=64, width=64),
    "l2_layernorm_residual": dict(batch_size=32, seq_len=512, hidden_size=1024),
    "l2_scale_bias_clamp_tanh": dict(batch_size=64, channels=128, height=64, width=64),
    "l1_matmul": dict(M=4096, K=4096, N=4096),
    "l1_bmm": dict(batch_size=32, m=512, k=512, n=512),
    "l1_conv2d": dict(batch_size=32, in_channels=64, out_channels=128, height=64, width=64),
    "l1_softmax": dict(batch_size=4096, dim=8192),
    "l1_layernorm": dict(batch_size=32, seq_len=512, normalized_size=1024),
    "l1_groupnorm": dict(batch_size=32, channels_per_group=16, dim1=64, dim2=64),
    "l1_sum_dim": dict(batch_size=128, dim1=1024, dim2=1024),
    "l1_cumsum": dict(batch_size=4096, length=4096),
}

def cpu_us(fn, n=200):
    fn(); torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n): fn()
    dt = (time.perf_counter() - t) / n * 1e6
    torch.cuda.synchronize(); return dt

res = {}
names = sorted(f[:-3] for f in os.listdir(f"{gb.ROOT}/builtin") if f.endswith(".py"))
for n in names:
    tsrc = open(f"{gb.ROOT}/builtin/{n}.py").read(); ssrc = open(f"{gb.ROOT}/solutions/{n}.py").read()
    row = {}
    for label, consts in [("x1", {}), ("real", REAL.get(n))]:
        if consts is None: continue
        try:
            tm = gb.load(with_constants(tsrc, consts), f"t_{n}"); sm = gb.load(ssrc, f"s_{n}")
            rm = gb.build(tm.Model, tm, 0).eval(); nm = gb.build(sm.ModelNew, tm, 0).eval(); x = gb.inputs(tm, 0)
            with torch.no_grad():
                ref = rm(*x); out = nm(*x)
                rel = gb.compare(out, ref, torch.float32) if ref.is_floating_point() else gb.compare(out, ref, None)
                if label == "x1":
                    row["cpu_us_ref"] = cpu_us(lambda: rm(*x)); row["cpu_us_new"] = cpu_us(lambda: nm(*x))
                else:
                    t_ref = min(do_bench(lambda: rm(*x), warmup=10, rep=100) for _ in range(3))
                    t_new = min(do_bench(lambda: nm(*x), warmup=10, rep=100) for _ in range(3))
                    row["real"] = dict(ref_us=t_ref * 1e3, new_us=t_new * 1e3, speedup=t_ref / t_new, rel=rel)
        except Exception as e:
            row[label] = f"FAIL {type(e).__name__}: {str(e)[:200]}"
    res[n] = row
    print(n, json.dumps(row), flush=True)
json.dump(res, open(os.environ.get("OUT", "/tmp") + "/perf.json", "w"), indent=1)
