"""3xTF32 pre-split: chained accumulator vs per-step partial + FADD (throwaway)."""
import importlib.util, json, os, torch, triton, triton.language as tl
from triton.testing import do_bench
spec = importlib.util.spec_from_file_location("mm", "benchmarks/kernelbench/solutions/level1/1_Square_matrix_multiplication_.py")
mm = importlib.util.module_from_spec(spec); spec.loader.exec_module(mm)

@triton.jit
def mm_partial(a_hi_ptr, a_lo_ptr, bt_hi_ptr, bt_lo_ptr, c_ptr, M, N, K, stride_cm, stride_cn,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SMALL_FIRST: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M); num_pid_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * num_pid_n
    first_m = (pid // group_size) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % group_m
    pid_n = (pid % group_size) // group_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M); offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N); offs_k = tl.arange(0, BLOCK_K)
    a_off = offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
    b_off = offs_n[None, :].to(tl.int64) * K + offs_k[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a_mask = (offs_m[:, None] < M) & (offs_k[None, :] + k0 < K)
        b_mask = (offs_k[:, None] + k0 < K) & (offs_n[None, :] < N)
        a_hi = tl.load(a_hi_ptr + a_off, mask=a_mask, other=0.0); a_lo = tl.load(a_lo_ptr + a_off, mask=a_mask, other=0.0)
        b_hi = tl.load(bt_hi_ptr + b_off, mask=b_mask, other=0.0); b_lo = tl.load(bt_lo_ptr + b_off, mask=b_mask, other=0.0)
        part = tl.dot(a_lo, b_hi, input_precision="tf32")
        part = tl.dot(a_hi, b_lo, part, input_precision="tf32")
        part = tl.dot(a_hi, b_hi, part, input_precision="tf32")
        acc += part
        a_off += BLOCK_K; b_off += BLOCK_K
    c_ptrs = c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))

@triton.jit
def mm_two_acc(a_hi_ptr, a_lo_ptr, bt_hi_ptr, bt_lo_ptr, c_ptr, M, N, K, stride_cm, stride_cn,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SMALL_FIRST: tl.constexpr):
    # big products and small corrections in separate accumulators, summed at the end
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M); num_pid_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * num_pid_n
    first_m = (pid // group_size) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % group_m
    pid_n = (pid % group_size) // group_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M); offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N); offs_k = tl.arange(0, BLOCK_K)
    a_off = offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
    b_off = offs_n[None, :].to(tl.int64) * K + offs_k[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    small = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a_mask = (offs_m[:, None] < M) & (offs_k[None, :] + k0 < K)
        b_mask = (offs_k[:, None] + k0 < K) & (offs_n[None, :] < N)
        a_hi = tl.load(a_hi_ptr + a_off, mask=a_mask, other=0.0); a_lo = tl.load(a_lo_ptr + a_off, mask=a_mask, other=0.0)
        b_hi = tl.load(bt_hi_ptr + b_off, mask=b_mask, other=0.0); b_lo = tl.load(bt_lo_ptr + b_off, mask=b_mask, other=0.0)
        small = tl.dot(a_lo, b_hi, small, input_precision="tf32")
        small = tl.dot(a_hi, b_lo, small, input_precision="tf32")
        acc = tl.dot(a_hi, b_hi, acc, input_precision="tf32")
        a_off += BLOCK_K; b_off += BLOCK_K
    c_ptrs = c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc + small, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))

N = 4096
A = torch.rand(N, N, device="cuda"); B = torch.rand(N, N, device="cuda")
exact = A.double() @ B.double(); ref = A @ B
def errs(C):
    return dict(max_abs_vs_fp64=round((C.double() - exact).abs().max().item(), 6), kb_ok=bool(((C - ref).abs() <= 1e-4 + 1e-4 * ref.abs()).all()))
res = {"torch_ms": do_bench(lambda: A @ B, warmup=10, rep=60), "torch_vs_fp64": (ref.double() - exact).abs().max().item()}
# randn inputs: error vs fp64 relative to the norm
An = torch.randn(N, N, device="cuda"); Bn = torch.randn(N, N, device="cuda"); exn = An.double() @ Bn.double()
f32 = dict(dtype=torch.float32, device="cuda")
a_hi, a_lo, bt_hi, bt_lo = (torch.empty((N, N), **f32) for _ in range(4))
mm.split_tf32_kernel[(N // 64, N // 64)](A, a_hi, a_lo, N, N, N, 1, N, 1, BLOCK_R=64, BLOCK_C=64, num_warps=4)
mm.split_tf32_kernel[(N // 64, N // 64)](B, bt_hi, bt_lo, N, N, N, 1, 1, N, BLOCK_R=64, BLOCK_C=64, num_warps=4)
C = torch.empty_like(ref)
for kname, kern in [("chained", mm.matmul_3xtf32_kernel), ("partial", mm_partial), ("two_acc", mm_two_acc)]:
    for bm, bn, bk, w, s in [(128, 128, 32, 4, 3), (128, 256, 16, 8, 4), (128, 128, 32, 8, 3), (128, 128, 16, 4, 4), (128, 128, 16, 8, 5)]:
        key = f"{kname}/{bm}x{bn}x{bk}/w{w}/s{s}"
        extra = {} if kname == "chained" else dict(SMALL_FIRST=True)
        def run():
            kern[(triton.cdiv(N, bm) * triton.cdiv(N, bn),)](a_hi, a_lo, bt_hi, bt_lo, C, N, N, N, N, 1,
                BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s, **extra)
        try:
            run(); t = do_bench(run, warmup=10, rep=50)
            res[key] = dict(ms=round(t, 4), **errs(C))
        except Exception as e:
            res[key] = f"FAIL {type(e).__name__}: {str(e)[:100]}"
        print(key, res[key], flush=True)
# full model on randn inputs for the chosen default
model = mm.ModelNew(); outn = model(An, Bn)
res["model_randn_rel_l2_vs_fp64"] = ((outn.double() - exn).norm() / exn.norm()).item()
res["torch_randn_rel_l2_vs_fp64"] = (((An @ Bn).double() - exn).norm() / exn.norm()).item()
print(res["model_randn_rel_l2_vs_fp64"], res["torch_randn_rel_l2_vs_fp64"])
json.dump(res, open(os.environ.get("OUT", "/tmp") + "/mm3.json", "w"), indent=1)
