"""Matmul layout/precision experiment (throwaway): does a K-major B let tf32 use wgmma?"""
import torch, triton, triton.language as tl, json, os
from triton.testing import do_bench

@triton.jit
def transpose_kernel(x_ptr, y_ptr, R, C, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = (r[:, None] < R) & (c[None, :] < C)
    x = tl.load(x_ptr + r[:, None].to(tl.int64) * C + c[None, :], mask=m)
    tl.store(y_ptr + c[None, :].to(tl.int64) * R + r[:, None], x, mask=m)

@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M); num_pid_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * num_pid_n
    first_m = (pid // group_size) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % group_m
    pid_n = (pid % group_size) // group_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M); offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N); offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None].to(tl.int64) * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :].to(tl.int64) * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k0 < K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] + k0 < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak; b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))

N = 4096
A = torch.rand(N, N, device="cuda"); B = torch.rand(N, N, device="cuda")
exact = A.double() @ B.double(); ref = A @ B
Bt = torch.empty_like(B)
tt = do_bench(lambda: transpose_kernel[(N // 64, N // 64)](B, Bt, N, N, BLOCK=64, num_warps=4))
assert torch.equal(Bt, B.t().contiguous())
print("transpose ms", tt, flush=True)
C = torch.empty_like(ref)
res = {"transpose_ms": tt, "torch_ms": do_bench(lambda: A @ B)}
for layout in ("kmajor", "nmajor"):
    bb, sbk, sbn = (Bt, 1, N) if layout == "kmajor" else (B, N, 1)
    for prec in ("tf32", "tf32x3", "bf16x3"):
        for bm, bn, bk, w, s in [(128, 128, 32, 8, 3), (128, 256, 32, 8, 3), (128, 128, 64, 8, 3), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 128, 16, 8, 4), (256, 128, 32, 8, 3)]:
            key = f"{layout}/{prec}/{bm}x{bn}x{bk}/w{w}/s{s}"
            def run():
                mm_kernel[(triton.cdiv(N, bm) * triton.cdiv(N, bn),)](A, bb, C, N, N, N, N, 1, sbk, sbn, N, 1,
                    BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, PRECISION=prec, num_warps=w, num_stages=s)
            try:
                run(); t = do_bench(run, warmup=10, rep=50)
                d = (C.double() - exact).abs(); kb = bool(((C - ref).abs() <= 1e-4 + 1e-4 * ref.abs()).all())
                res[key] = dict(ms=round(t, 4), tflops=round(2 * N**3 / t / 1e9, 1), max_abs_vs_fp64=d.max().item(), kb_ok=kb)
            except Exception as e:
                res[key] = f"FAIL {type(e).__name__}: {str(e)[:120]}"
            print(key, res[key], flush=True)
json.dump(res, open(os.environ.get("OUT", "/tmp") + "/mm.json", "w"), indent=1)
