"""Full-size KernelBench level-1 checks and timings for our Triton solutions (throwaway)."""
import importlib.util, sys, time, json, os, math
import torch, triton
from triton.testing import do_bench

SOL = "benchmarks/kernelbench/solutions/level1"
OUT = os.environ.get("OUT", "/tmp")
torch.manual_seed(0)
dev = "cuda"
print(torch.__version__, triton.__version__, torch.cuda.get_device_name(), flush=True)
print("allow_tf32 matmul:", torch.backends.cuda.matmul.allow_tf32, flush=True)

def load(fname):
    spec = importlib.util.spec_from_file_location(fname.replace(".py", "").lstrip("0123456789_"), f"{SOL}/{fname}")
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m

def compare(out, ref):
    """Chunked: max abs diff, KB allclose(1e-4), ours allclose(1e-2), rel L2."""
    o, r = out.reshape(-1), ref.reshape(-1)
    maxd, num, den, kb_ok, ours_ok = 0.0, 0.0, 0.0, True, True
    step = 1 << 28
    for i in range(0, o.numel(), step):
        a, b = o[i:i + step].double(), r[i:i + step].double()
        d = (a - b).abs()
        maxd = max(maxd, d.max().item())
        kb_ok &= bool((d <= 1e-4 + 1e-4 * b.abs()).all())
        ours_ok &= bool((d <= 1e-2 + 1e-2 * b.abs()).all())
        num += (d * d).sum().item(); den += (b * b).sum().item()
        del a, b, d
    return dict(max_abs=maxd, kb_allclose_1e4=kb_ok, allclose_1e2=ours_ok, rel_l2=math.sqrt(num / den))

def bench(fn):
    return do_bench(fn, warmup=10, rep=60)

def events_mean(fn, n=10):
    # KernelBench-style: per-trial events, mean.
    ts = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    return sum(ts) / len(ts)

results = {}
which = sys.argv[1:] or ["relu", "softmax", "rmsnorm", "matmul"]

if "relu" in which:
    m = load("19_ReLU.py"); x = torch.rand(4096, 393216, device=dev) * 2 - 1
    ref = torch.relu(x); out = m.ModelNew()(x)
    r = compare(out, ref); del out
    r["ref_ms"] = bench(lambda: torch.relu(x)); r["new_ms"] = bench(lambda: m.ModelNew()(x))
    r["ref_ev_ms"] = events_mean(lambda: torch.relu(x)); r["new_ev_ms"] = events_mean(lambda: m.ModelNew()(x))
    gb = 2 * x.numel() * 4 / 1e9
    r["new_GBps"] = gb / r["new_ms"] * 1e3; r["ref_GBps"] = gb / r["ref_ms"] * 1e3
    sweep = {}
    o = torch.empty_like(x); n = x.numel()
    for blk, w in [(1024, 4), (2048, 4), (2048, 8), (4096, 4), (4096, 8), (8192, 8), (8192, 16), (16384, 16)]:
        sweep[f"{blk}/{w}"] = bench(lambda: m.relu_kernel[(triton.cdiv(n, blk),)](x, o, n, BLOCK_SIZE=blk, num_warps=w))
    r["sweep_ms"] = sweep
    results["19_ReLU"] = r; print("relu", json.dumps(r), flush=True)
    del x, ref, o; torch.cuda.empty_cache()

if "softmax" in which:
    m = load("23_Softmax.py"); x = torch.rand(4096, 393216, device=dev)
    ref = torch.softmax(x, dim=1); out = m.ModelNew()(x)
    r = compare(out, ref); del out
    r["ref_ms"] = bench(lambda: torch.softmax(x, dim=1)); r["new_ms"] = bench(lambda: m.ModelNew()(x))
    r["ref_ev_ms"] = events_mean(lambda: torch.softmax(x, dim=1)); r["new_ev_ms"] = events_mean(lambda: m.ModelNew()(x))
    gb = 3 * x.numel() * 4 / 1e9
    r["new_GBps_3pass"] = gb / r["new_ms"] * 1e3
    o = torch.empty_like(x); sweep = {}
    for blk, w in [(2048, 8), (4096, 8), (4096, 16), (8192, 8), (8192, 16), (8192, 32), (16384, 16), (16384, 32)]:
        sweep[f"{blk}/{w}"] = bench(lambda: m.softmax_kernel[(4096,)](x, o, 393216, x.stride(0), o.stride(0), BLOCK=blk, num_warps=w))
    r["sweep_ms"] = sweep
    results["23_Softmax"] = r; print("softmax", json.dumps(r), flush=True)
    del x, ref, o; torch.cuda.empty_cache()

if "rmsnorm" in which:
    m = load("36_RMSNorm_.py"); x = torch.rand(112, 64, 512, 512, device=dev)
    def ref_fn():
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)
        return x / rms
    ref = ref_fn(); model = m.ModelNew(64); out = model(x)
    r = compare(out, ref); del out
    r["ref_ms"] = bench(ref_fn); r["new_ms"] = bench(lambda: model(x))
    r["ref_ev_ms"] = events_mean(ref_fn); r["new_ev_ms"] = events_mean(lambda: model(x))
    gb = 2 * x.numel() * 4 / 1e9
    r["new_GBps"] = gb / r["new_ms"] * 1e3
    o = torch.empty_like(x); sweep = {}
    for bp, w in [(32, 4), (64, 4), (64, 8), (128, 8), (128, 16), (256, 8), (256, 16)]:
        g = (triton.cdiv(512 * 512, bp), 112)
        sweep[f"{bp}/{w}"] = bench(lambda: m.rmsnorm_kernel[g](x, o, 64, 512 * 512, 1e-5, BLOCK_C=64, BLOCK_P=bp, ONE_TILE=True, num_warps=w))
    r["sweep_ms"] = sweep
    results["36_RMSNorm_"] = r; print("rmsnorm", json.dumps(r), flush=True)
    del x, ref, o; torch.cuda.empty_cache()

if "matmul" in which:
    m = load("1_Square_matrix_multiplication_.py"); N = 4096
    A = torch.rand(N, N, device=dev); B = torch.rand(N, N, device=dev)
    ref = torch.matmul(A, B); out = m.ModelNew()(A, B)
    exact = (A.double() @ B.double())
    r = compare(out, ref); r["vs_fp64"] = compare(out, exact); r["torch_vs_fp64"] = compare(ref, exact)
    r["ref_ms"] = bench(lambda: torch.matmul(A, B)); r["new_ms"] = bench(lambda: m.ModelNew()(A, B))
    r["ref_ev_ms"] = events_mean(lambda: torch.matmul(A, B)); r["new_ev_ms"] = events_mean(lambda: m.ModelNew()(A, B))
    r["new_TFLOPs"] = 2 * N ** 3 / r["new_ms"] / 1e9
    C = torch.empty_like(ref); sweep = {}
    for bm, bn, bk, w, s, prec in [(128, 128, 32, 8, 3, "tf32x3"), (128, 128, 32, 8, 4, "tf32x3"), (128, 128, 64, 8, 3, "tf32x3"),
                                   (128, 256, 32, 8, 3, "tf32x3"), (256, 128, 32, 8, 3, "tf32x3"), (128, 64, 32, 4, 4, "tf32x3"),
                                   (128, 128, 32, 4, 3, "tf32x3"), (128, 128, 32, 8, 3, "tf32"), (128, 256, 32, 8, 3, "tf32"),
                                   (128, 128, 64, 8, 3, "tf32")]:
        def run():
            m.matmul_kernel[(triton.cdiv(N, bm) * triton.cdiv(N, bn),)](A, B, C, N, N, N, N, 1, N, 1, N, 1,
                BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, PRECISION=prec, num_warps=w, num_stages=s)
        try:
            run(); t = bench(run); err = compare(C, exact)
            sweep[f"{bm}x{bn}x{bk}/w{w}/s{s}/{prec}"] = dict(ms=t, max_abs_vs_fp64=err["max_abs"], kb_ok_vs_torch=compare(C, ref)["kb_allclose_1e4"])
        except Exception as e:
            sweep[f"{bm}x{bn}x{bk}/w{w}/s{s}/{prec}"] = f"FAIL {type(e).__name__}: {str(e)[:150]}"
        print(" ", list(sweep.items())[-1], flush=True)
    r["sweep"] = sweep
    results["1_Square_matrix_multiplication_"] = r; print("matmul", json.dumps(r), flush=True)

json.dump(results, open(f"{OUT}/kb_results.json", "w"), indent=1)
