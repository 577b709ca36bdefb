"""Built-in suite on a real GPU: every variant (fp32 + bf16) and timings vs PyTorch (throwaway)."""
import importlib.util, sys, os, json, math, time, hashlib, traceback
sys.path.insert(0, os.getcwd())
import torch, triton
from triton.testing import do_bench
from services.sandbox.task_source import parse_task, with_constants, resized_plans, tiny_plans

ROOT = "services/sandbox/tasks"
OUT = os.environ.get("OUT", "/tmp")
MODDIR = "/tmp/kbmods"; os.makedirs(MODDIR, exist_ok=True)
dev = torch.device("cuda")
LAUNCHES = []
_orig = triton.runtime.jit.JITFunction.run
def _run(self, *args, grid, warmup, **kw):
    LAUNCHES.append((self.fn.__module__, self.fn.__name__, grid))
    return _orig(self, *args, grid=grid, warmup=warmup, **kw)
triton.runtime.jit.JITFunction.run = _run

def load(src, stem):
    name = f"{stem}_{hashlib.sha256(src.encode()).hexdigest()[:12]}"
    if name in sys.modules: return sys.modules[name]
    path = f"{MODDIR}/{name}.py"; open(path, "w").write(src)
    spec = importlib.util.spec_from_file_location(name, path); m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m; spec.loader.exec_module(m); return m

def build(cls, mod, seed, dtype=None, round_to=None):
    torch.manual_seed(seed); init = mod.get_init_inputs()
    torch.manual_seed(seed); m = cls(*init).to(dev)
    if dtype is not None: m = m.to(dtype)
    elif round_to is not None:
        with torch.no_grad():
            for t in [*m.parameters(), *m.buffers()]:
                if t.is_floating_point(): t.copy_(t.to(round_to))
    return m

def inputs(mod, seed, scale=1.0, dtype=None, round_to=None):
    torch.manual_seed(seed)
    with torch.device(dev): raw = mod.get_inputs()
    out = []
    for v in raw:
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            v = v * scale
            if dtype is not None: v = v.to(dtype)
            elif round_to is not None: v = v.to(round_to).to(v.dtype)
        out.append(v)
    return out

TOL = {torch.float32: (1e-2, 1e-2, 1e-3), torch.bfloat16: (2e-2, 2e-2, 2e-2)}
def compare(out, ref, want):
    assert out.shape == ref.shape, (out.shape, ref.shape)
    if not ref.is_floating_point():
        assert out.dtype == ref.dtype
        bad = (out != ref).sum().item()
        assert bad == 0, f"int mismatch {bad}/{out.numel()}"
        return 0.0
    assert out.dtype == want, (out.dtype, want)
    atol, rtol, l2 = TOL[want]; o, r = out.float(), ref.float()
    rel = ((o - r).norm() / r.norm()).item()
    assert torch.allclose(o, r, atol=atol, rtol=rtol), f"allclose max abs {(o - r).abs().max().item():.3g} rel {rel:.2e}"
    assert rel <= l2, f"rel l2 {rel:.3g}"
    return rel

def check(name):
    tsrc = open(f"{ROOT}/builtin/{name}.py").read(); ssrc = open(f"{ROOT}/solutions/{name}.py").read()
    sizes = parse_task(tsrc).sizes(8); plans = resized_plans(sizes)
    variants = {"own": {}, "seed": dict(seed=1), "x2": dict(scale=2.0), "resized": dict(c=plans[0]), "half": dict(c=plans[1]),
                "tiny": dict(c=tiny_plans(sizes, 4)[0]), "bf16": dict(bf16=True)}
    res = {}
    for vn, v in variants.items():
        tm = load(with_constants(tsrc, v.get("c", {})), f"t_{name}"); sm = load(ssrc, f"s_{name}")
        seed, scale = v.get("seed", 0), v.get("scale", 1.0)
        if v.get("bf16"):
            rm = build(tm.Model, tm, seed, round_to=torch.bfloat16); nm = build(sm.ModelNew, tm, seed, dtype=torch.bfloat16)
            ri = inputs(tm, seed, scale, round_to=torch.bfloat16); ni = inputs(tm, seed, scale, dtype=torch.bfloat16); want = torch.bfloat16
        else:
            rm = build(tm.Model, tm, seed); nm = build(sm.ModelNew, tm, seed); ri = inputs(tm, seed, scale); ni = inputs(tm, seed, scale); want = torch.float32
        worst = 0.0
        for train, grad in [(False, False), (True, True)]:
            rm.train(train); nm.train(train)
            with torch.set_grad_enabled(grad):
                ref = rm(*ri); LAUNCHES.clear(); out = nm(*ni); torch.cuda.synchronize()
            own = [l for l in LAUNCHES if l[0] == sm.__name__]
            assert own, "no own launch"
            worst = max(worst, compare(out, ref, want))
        res[vn] = worst
    return res

def timing(name, factor):
    tsrc = open(f"{ROOT}/builtin/{name}.py").read(); ssrc = open(f"{ROOT}/solutions/{name}.py").read()
    sizes = parse_task(tsrc).sizes(8)
    tm = load(with_constants(tsrc, {k: v * factor for k, v in sizes.items()}), f"t_{name}"); sm = load(ssrc, f"s_{name}")
    rm = build(tm.Model, tm, 0).eval(); nm = build(sm.ModelNew, tm, 0).eval(); x = inputs(tm, 0)
    with torch.no_grad():
        ref = rm(*x); out = nm(*x); rel = compare(out, ref, torch.float32) if ref.is_floating_point() else compare(out, ref, None)
        t_ref = min(do_bench(lambda: rm(*x), warmup=10, rep=100) for _ in range(3)); t_new = min(do_bench(lambda: nm(*x), warmup=10, rep=100) for _ in range(3))
    return dict(ref_us=t_ref * 1e3, new_us=t_new * 1e3, speedup=t_ref / t_new, rel=rel)

if __name__ == "__main__":
    names = sys.argv[1:] or sorted(f[:-3] for f in os.listdir(f"{ROOT}/builtin") if f.endswith(".py"))
    print(torch.__version__, triton.__version__, torch.cuda.get_device_name(), flush=True)
    allres = {}
    for n in names:
        t0 = time.time(); row = {}
        try:
            row["check"] = check(n)
        except Exception as e:
            row["check"] = f"FAIL {type(e).__name__}: {str(e)[:300]}"; traceback.print_exc()
        for f in (1, 4):
            try: row[f"time_x{f}"] = timing(n, f)
            except Exception as e: row[f"time_x{f}"] = f"FAIL {type(e).__name__}: {str(e)[:200]}"
        allres[n] = row
        c = row["check"]; cs = " ".join(f"{k}={v:.1e}" for k, v in c.items()) if isinstance(c, dict) else c
        ts = " ".join(f"x{f}: {row[f'time_x{f}']['ref_us']:.1f}/{row[f'time_x{f}']['new_us']:.1f}us ({row[f'time_x{f}']['speedup']:.2f}x)" if isinstance(row[f'time_x{f}'], dict) else f"x{f}: {row[f'time_x{f}']}" for f in (1, 4))
        print(f"{n:26s} {cs} | {ts} | {time.time()-t0:.1f}s", flush=True)
    json.dump(allres, open(f"{OUT}/builtin_results.json", "w"), indent=1)
