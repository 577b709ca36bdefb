"""3xTF32 pre-split GEMM configs (throwaway)."""
import importlib.util, json, os, torch, triton
from triton.testing import do_bench
spec = importlib.util.spec_from_file_location("mm", "benchmarks/kernelbench/solutions/level1/1_Square_matrix_multiplication_.py")
mm = importlib.util.module_from_spec(spec); spec.loader.exec_module(mm)
N = 4096
A = torch.rand(N, N, device="cuda"); B = torch.rand(N, N, device="cuda")
exact = A.double() @ B.double(); ref = A @ B
model = mm.ModelNew()
out = model(A, B)
def errs(C):
    return dict(max_abs_vs_fp64=(C.double() - exact).abs().max().item(),
                kb_ok=bool(((C - ref).abs() <= 1e-4 + 1e-4 * ref.abs()).all()),
                rel_l2_vs_torch=((C - ref).norm() / ref.norm()).item())
res = {"torch_ms": do_bench(lambda: A @ B, warmup=10, rep=60), "torch_vs_fp64": (ref.double() - exact).abs().max().item()}
res["model"] = dict(ms=do_bench(lambda: model(A, B), warmup=10, rep=60), **errs(out))
print(res, flush=True)
f32 = dict(dtype=torch.float32, device="cuda")
a_hi, a_lo, bt_hi, bt_lo = (torch.empty((N, N), **f32) for _ in range(4))
def split():
    mm.split_tf32_kernel[(N // 64, N // 64)](A, a_hi, a_lo, N, N, N, 1, N, 1, BLOCK_R=64, BLOCK_C=64, num_warps=4)
    mm.split_tf32_kernel[(N // 64, N // 64)](B, bt_hi, bt_lo, N, N, N, 1, 1, N, BLOCK_R=64, BLOCK_C=64, num_warps=4)
split(); torch.cuda.synchronize()
hb = a_hi.view(torch.int32)
res["split_ms"] = do_bench(split, warmup=10, rep=60)
res["split_exact"] = bool(torch.equal(a_hi + a_lo, A)) and bool(((hb & 0x1FFF) == 0).all()) and bool(torch.equal(bt_hi.t() + bt_lo.t(), B))
for bs in (32, 128):
    def split2():
        mm.split_tf32_kernel[(N // bs, N // bs)](B, bt_hi, bt_lo, N, N, N, 1, 1, N, BLOCK_R=bs, BLOCK_C=bs, num_warps=4 if bs == 32 else 8)
    res[f"splitB_{bs}_ms"] = do_bench(split2)
res["splitB_64_ms"] = do_bench(lambda: mm.split_tf32_kernel[(N // 64, N // 64)](B, bt_hi, bt_lo, N, N, N, 1, 1, N, BLOCK_R=64, BLOCK_C=64, num_warps=4))
print(res, flush=True)
C = torch.empty_like(ref)
for bm, bn, bk, w, s in [(128, 128, 32, 8, 3), (128, 128, 32, 8, 4), (128, 256, 32, 8, 3), (128, 256, 16, 8, 4), (128, 128, 64, 8, 2),
                         (128, 128, 16, 8, 4), (256, 128, 32, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 128, 32, 4, 3), (64, 256, 32, 8, 3)]:
    key = f"{bm}x{bn}x{bk}/w{w}/s{s}"
    def run():
        mm.matmul_3xtf32_kernel[(triton.cdiv(N, bm) * triton.cdiv(N, bn),)](a_hi, a_lo, bt_hi, bt_lo, C, N, N, N, N, 1,
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s)
    try:
        run(); t = do_bench(run, warmup=10, rep=50)
        res[key] = dict(ms=round(t, 4), tflops_eff=round(2 * N**3 / t / 1e9, 1), **errs(C))
    except Exception as e:
        res[key] = f"FAIL {type(e).__name__}: {str(e)[:150]}"
    print(key, res[key], flush=True)
json.dump(res, open(os.environ.get("OUT", "/tmp") + "/mm2.json", "w"), indent=1)
