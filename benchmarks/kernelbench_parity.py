"""KernelBench parity: drkernel's verdicts against KernelBench's own harness on the same kernels.

GPU run (one GPU; drkernel first, then KernelBench, unless ``--concurrent`` runs both at once
on problems that fit in memory twice, their latencies then including the sharing):

    python benchmarks/kernelbench_parity.py --kernelbench .kb --out OUT --device cuda \
        [--set fast] [--problems level1/19_ReLU,level2/12_Gemm_Multiply_LeakyReLU] [--timeout 900]

A run cut by a time limit resumes with ``--merge OUT/kernelbench_parity.json``: what a merged
report holds is not judged again.

KernelBench's harness takes 90-130 s per candidate on the large level-1 problems (it draws
every input on the host), so a whole run outlasts a short GPU lease. ``--set fast`` leaves them
out (every problem not marked ``large`` in ``PROBLEMS``, for both harnesses in one short run);
otherwise split the work with ``--judges drkernel|kernelbench`` and ``--problems`` over several
runs, then combine their reports (each candidate's first result wins) with ``--merge A.json
B.json ...``; a run with ``--judges kernelbench --device cpu`` judges nothing and only prints
the merged table.
``--candidates NAME[#PROFILE],...`` judges single candidates (in the order given, so that slow
ones can go last), under one drkernel profile where ``#strict`` or ``#kernelbench`` is named.

CPU check of the corpus (drkernel only, every task shrunk to interpreter-friendly sizes with
``services.sandbox.shared.task_source.with_constants``; KernelBench's harness needs CUDA and is not run):

    python benchmarks/kernelbench_parity.py --kernelbench .kb --out OUT --device cpu --shrink

``--kernelbench DIR`` is a KernelBench checkout: its problem files
(``DIR/KernelBench/level{1,2}/<stem>.py``) are sent unchanged (or shrunk with ``--shrink``) as
the task, and on CUDA its ``src/kernelbench/eval.py`` is imported from ``DIR/src`` at run time
(modules it imports that are not installed, such as LLM clients, are stubbed; the JSON lists
them). Nothing of KernelBench is needed to import this file.

Candidates: for every problem of ``PROBLEMS``, our honest solution
``benchmarks/kernelbench/solutions/<level>/<stem>.py`` and every flawed variant
``benchmarks/kernelbench/flawed/<level>/<stem>__<flaw>.py``. A flawed file's docstring declares
its defect on a line ``flaw: <kind>: <what is wrong>`` and what KernelBench's harness should say
at the task's own shape on a line ``kernelbench: pass`` or ``kernelbench: fail``.

Each candidate is judged by drkernel over gRPC (a sandbox server on loopback) under
CORRECTNESS_PROFILE_STRICT and CORRECTNESS_PROFILE_KERNELBENCH and, on CUDA, once by
``eval_kernel_against_ref`` (backend "triton", fp32, 5 correctness trials, 100 perf trials,
measure_performance=True, in a fresh process per candidate so that a crashed CUDA context
cannot spill into the next one). Expected outcomes: honest -> correct everywhere; flawed ->
not correct under drkernel strict; under drkernel's kernelbench profile, not correct for
``hack`` and ``torchfallback`` (its anti-hacking defences run under every profile), else what
the file declares for KernelBench; KernelBench -> what the file declares.

Writes OUT/kernelbench_parity.json (per candidate: both drkernel verdicts with reward,
speedup, errors, hack reasons and latencies; KernelBench's compiled / correctness / runtime /
ref_runtime / speedup / metadata and latency), prints progress to stderr and the agreement
table last on stdout. Exit status 1 if any judge differs from its expectation.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import contextlib
import importlib
import inspect
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drkernel.v1 import (
    common_pb2,
    sandbox_pb2_grpc,
)
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.shared.task_source import with_constants

if TYPE_CHECKING:
    from services.sandbox.client import LocalSandbox

CORPUS = ROOT / "benchmarks" / "kernelbench"
SOLUTIONS = CORPUS / "solutions"
FLAWED = CORPUS / "flawed"
FLAW_KINDS = ("hardcoded", "nomask", "lowprec", "torchfallback", "hack", "wrong")
# Kinds that only show at shapes other than the task's (KernelBench tests the task's only).
SHAPE_KINDS = ("hardcoded", "nomask")
# Kinds that drkernel's anti-hacking defences catch under every correctness profile.
DEFENCE_KINDS = ("hack", "torchfallback")
PROFILES = {"strict": pb.CORRECTNESS_PROFILE_STRICT, "kernelbench": pb.CORRECTNESS_PROFILE_KERNELBENCH}
JUDGES = (*PROFILES, "KernelBench")  # drkernel's two profiles, then KernelBench's own harness
# Never stubbed: without these KernelBench's harness cannot do its job.
ESSENTIAL_MODULES = ("kernelbench", "torch", "triton", "numpy", "pydantic")
KB_CORRECT_TRIALS = 5
KB_PERF_TRIALS = 100


@dataclass(frozen=True)
class Problem:
    """A KernelBench problem and the size constants that make it small enough for the CPU
    interpreter (``--shrink``); sizes are chosen not to be multiples of the kernels' blocks.
    ``large``: inputs of 4 GB or more, which KernelBench's harness draws on the host (90-130 s
    per candidate on an H100 machine), so the problem is left out of ``--set fast``."""

    key: str  # "level1/19_ReLU"
    shrink: dict[str, int]
    large: bool = False

    @property
    def level(self) -> str:
        return self.key.split("/")[0]

    @property
    def stem(self) -> str:
        return self.key.split("/")[1]


_ELEMENTWISE = {"batch_size": 16, "dim": 1000}
_MATMUL = {"M": 40, "K": 72, "N": 48}
_REDUCTION = {"batch_size": 4, "dim1": 40, "dim2": 300}
_LINEAR = {"batch_size": 24, "in_features": 72, "out_features": 48}
_LINEAR_SIZES = {"batch_size": 24, "input_size": 72, "hidden_size": 48}
# Row reductions: several column tiles per row, so that the per-tile partials are combined.
_WIDE = {"batch_size": 24, "in_features": 72, "out_features": 200}
_WIDE_SIZES = {"batch_size": 24, "input_size": 72, "hidden_size": 200}
PROBLEMS: tuple[Problem, ...] = (
    Problem("level1/1_Square_matrix_multiplication_", {"N": 72}),
    Problem("level1/2_Standard_matrix_multiplication_", _MATMUL),
    Problem("level1/3_Batched_matrix_multiplication", {"batch_size": 10, "m": 40, "k": 72, "n": 48}),
    Problem("level1/4_Matrix_vector_multiplication_", {"M": 24, "K": 5000}, large=True),
    Problem("level1/5_Matrix_scalar_multiplication", {"M": 64, "N": 100}, large=True),
    Problem("level1/16_Matmul_with_transposed_A", _MATMUL),
    Problem("level1/17_Matmul_with_transposed_B", _MATMUL),
    Problem("level1/18_Matmul_with_transposed_both", _MATMUL),
    Problem("level1/19_ReLU", _ELEMENTWISE, large=True),
    Problem("level1/20_LeakyReLU", _ELEMENTWISE, large=True),
    Problem("level1/21_Sigmoid", _ELEMENTWISE, large=True),
    Problem("level1/22_Tanh", _ELEMENTWISE, large=True),
    Problem("level1/23_Softmax", {"batch_size": 8, "dim": 20000}, large=True),
    Problem("level1/24_LogSoftmax", {"batch_size": 8, "dim": 20000}, large=True),
    Problem("level1/25_Swish", _ELEMENTWISE, large=True),
    Problem("level1/26_GELU_", _ELEMENTWISE, large=True),
    Problem("level1/29_Softplus", _ELEMENTWISE, large=True),
    Problem("level1/36_RMSNorm_", {"batch_size": 4, "features": 24, "dim1": 20, "dim2": 30}, large=True),
    Problem("level1/38_L1Norm_", {"batch_size": 8, "dim": 5000}, large=True),
    Problem("level1/47_Sum_reduction_over_a_dimension", _REDUCTION, large=True),
    Problem("level1/49_Max_reduction_over_a_dimension", _REDUCTION, large=True),
    Problem("level1/88_MinGPTNewGelu", _ELEMENTWISE),
    Problem("level2/9_Matmul_Subtract_Multiply_ReLU", _LINEAR),
    # Several output tiles along M and N, so that a tile mapping baked in for 8192 columns shows.
    Problem("level2/12_Gemm_Multiply_LeakyReLU", {"batch_size": 300, "in_features": 40, "out_features": 200}),
    Problem("level2/18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp", _WIDE),
    Problem("level2/22_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish", _WIDE_SIZES),
    Problem("level2/29_Matmul_Mish_Mish", _LINEAR),
    Problem("level2/33_Gemm_Scale_BatchNorm", _LINEAR),
    Problem("level2/40_Matmul_Scaling_ResidualAdd", _LINEAR),
    Problem(
        "level2/45_Gemm_Sigmoid_LogSumExp", {"batch_size": 24, "input_size": 40, "hidden_size": 72, "output_size": 200}
    ),
    Problem("level2/53_Gemm_Scaling_Hardtanh_GELU", _LINEAR),
    Problem("level2/56_Matmul_Sigmoid_Sum", _WIDE_SIZES),
    Problem("level2/59_Matmul_Swish_Scaling", _LINEAR),
    # 8 groups of 6 channels (the group size is not a power of two).
    Problem("level2/62_Matmul_GroupNorm_LeakyReLU_Sum", {**_LINEAR_SIZES, "num_groups": 8}),
    Problem("level2/63_Gemm_ReLU_Divide", _LINEAR),
    Problem("level2/64_Gemm_LogSumExp_LeakyReLU_LeakyReLU_GELU_GELU", _WIDE),
    Problem("level2/68_Matmul_Min_Subtract", _LINEAR),
    Problem("level2/70_Gemm_Sigmoid_Scaling_ResidualAdd", _LINEAR_SIZES),
    Problem("level2/76_Gemm_Add_ReLU", _LINEAR),
    Problem("level2/80_Gemm_Max_Subtract_GELU", _WIDE),
    Problem("level2/81_Gemm_Swish_Divide_Clamp_Tanh_Clamp", _LINEAR),
    Problem("level2/86_Matmul_Divide_GELU", {"batch_size": 24, "input_size": 72, "output_size": 48}),
    Problem("level2/95_Matmul_Add_Swish_Tanh_GELU_Hardtanh", _LINEAR),
    # 12 windows of 16 columns and 8 trailing columns that avg_pool1d drops.
    Problem("level2/98_Matmul_AvgPool_GELU_Scale_Max", _WIDE),
    Problem("level2/99_Matmul_GELU_Softmax", _WIDE),
)
# Named problem sets for --set: "fast" leaves out the problems KernelBench's harness is slow on.
PROBLEM_SETS: dict[str, tuple[Problem, ...]] = {
    "all": PROBLEMS,
    "fast": tuple(p for p in PROBLEMS if not p.large),
}


@dataclass(frozen=True)
class Candidate:
    """One solution file: honest (``flaw_kind`` None) or flawed."""

    problem: Problem
    path: Path
    flaw_kind: str | None = None
    flaw: str = ""
    kernelbench_expect: str = "pass"  # what KernelBench's harness should say at the task's shape

    @property
    def name(self) -> str:
        return f"{self.problem.level}/{self.path.stem}"

    @property
    def honest(self) -> bool:
        return self.flaw_kind is None

    def expected_correct(self, judge: str, shrunk: bool) -> bool | None:
        """Whether ``judge`` ("strict", "kernelbench" or "KernelBench") should call it correct;
        None where that is unknown: on a shrunk task a flaw that is invisible at the original
        shape (hardcoded sizes, a missing mask) may or may not show at the shrunk one."""
        if self.honest:
            return True
        if judge == "strict" or (judge == "kernelbench" and self.flaw_kind in DEFENCE_KINDS):
            return False
        if shrunk:
            return None
        return self.kernelbench_expect == "pass"


def declared_flaw(path: Path) -> tuple[str, str, str]:
    """(kind, what is wrong, kernelbench expectation) from a flawed file's module docstring."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    flaw = re.search(r"^flaw: (\w+): (.+)$", doc, re.MULTILINE)
    expect = re.search(r"^kernelbench: (pass|fail)\b", doc, re.MULTILINE)
    if not flaw or flaw.group(1) not in FLAW_KINDS or not expect:
        raise ValueError(f"{path}: the docstring must declare 'flaw: <kind>: <what>' and 'kernelbench: pass|fail'")
    return flaw.group(1), flaw.group(2).strip(), expect.group(1)


def candidates(problem: Problem) -> list[Candidate]:
    """The problem's honest solution, then its flawed variants by name."""
    found = [Candidate(problem, SOLUTIONS / problem.level / f"{problem.stem}.py")]
    for path in sorted((FLAWED / problem.level).glob(f"{problem.stem}__*.py")):
        kind, flaw, expect = declared_flaw(path)
        found.append(Candidate(problem, path, kind, flaw, expect))
    return found


@dataclass
class DrkernelResult:
    """One drkernel evaluation under one correctness profile."""

    verdict: str
    correct: bool
    profile_applied: str = ""
    reward: float = 0.0
    speedup: float = 0.0
    coverage: float = 0.0
    error: str = ""
    hack_reasons: list[str] = field(default_factory=list)
    failed_checks: list[str] = field(default_factory=list)
    evaluation_seconds: float = 0.0
    queue_seconds: float = 0.0
    wall_seconds: float = 0.0  # client-side latency of the Evaluate call
    device: str = ""


@dataclass
class KernelBenchResult:
    """One ``eval_kernel_against_ref`` evaluation."""

    compiled: bool = False
    correctness: bool = False
    runtime_us: float = -1.0
    ref_runtime_us: float = -1.0
    speedup: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)
    harness_error: str = ""  # an exception eval_kernel_against_ref raised, or the process's end
    wall_seconds: float = 0.0  # the eval_kernel_against_ref call alone


@dataclass
class Row:
    """One candidate and every judge's answer."""

    candidate: str
    problem: str
    flaw_kind: str | None
    flaw: str
    kernelbench_expect: str
    expected_correct: dict[str, bool | None]  # by judge; None: not determined (shrunk tasks)
    drkernel: dict[str, DrkernelResult] = field(default_factory=dict)
    kernelbench: KernelBenchResult | None = None
    note: str = ""


def request(
    candidate: Candidate,
    task_source: str,
    profile: str,
    device: int,
    timeout: float,
) -> pb.EvaluateRequest:
    """The EvaluateRequest for one candidate under one profile, with server-default timing."""
    return pb.EvaluateRequest(
        request_id=f"{candidate.name}#{profile}",
        reference_source=task_source,
        candidate_source=candidate.path.read_text(),
        task_name=candidate.problem.key,
        options=pb.EvaluateOptions(
            device=device,
            timeout_seconds=timeout,
            correctness_profile=PROFILES[profile],
        ),
    )


def drkernel_result(response: pb.EvaluateResponse | grpc.RpcError, wall_seconds: float) -> DrkernelResult:
    """The fields of one Evaluate answer (or its RPC error) that the report keeps."""
    if isinstance(response, grpc.RpcError):
        return DrkernelResult(
            verdict="RPC_" + response.code().name,
            correct=False,
            error=(response.details() or "")[:2000],
            wall_seconds=wall_seconds,
        )
    return DrkernelResult(
        verdict=pb.Verdict.Name(response.verdict),
        correct=response.verdict == pb.VERDICT_CORRECT,
        profile_applied=pb.CorrectnessProfile.Name(response.correctness_profile),
        reward=response.reward,
        speedup=response.speedup,
        coverage=response.coverage,
        error=response.error[:2000],
        hack_reasons=list(response.hack_reasons),
        failed_checks=[
            f"{pb.InputVariant.Name(c.variant)} {c.description}: {c.message[:300]}"
            for c in response.checks
            if not c.passed and not c.skipped
        ],
        evaluation_seconds=response.evaluation_seconds,
        queue_seconds=response.queue_seconds,
        wall_seconds=wall_seconds,
        device=response.device_name,
    )


def judge_drkernel(
    sandbox: LocalSandbox,
    requests: list[pb.EvaluateRequest],
    in_flight: int,
    timeout: float,
    on_result: Callable[[str, DrkernelResult], None],
) -> None:
    """Sends the requests to ``sandbox`` with ``in_flight`` unary calls at a time; ``on_result`` gets each
    result by request id as it comes."""

    def one(req: pb.EvaluateRequest) -> tuple[str, DrkernelResult]:
        start = time.perf_counter()
        try:
            response: pb.EvaluateResponse | grpc.RpcError = stub.Evaluate(req, timeout=timeout)
        except grpc.RpcError as error:
            response = error
        result = drkernel_result(response, time.perf_counter() - start)
        on_result(req.request_id, result)
        progress.set_postfix_str(f"{req.request_id}: {result.verdict}")
        progress.update()

    with (
        sandbox.channel() as channel,
        tqdm(total=len(requests), desc="drkernel", file=sys.stderr) as progress,
    ):
        stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
        with concurrent.futures.ThreadPoolExecutor(in_flight) as pool:
            list(pool.map(one, requests))


def run_drkernel(
    cands: list[Candidate],
    tasks: dict[str, str],
    device: str,
    timeout: float,
    on_result: Callable[[str, DrkernelResult], None],
    profiles: dict[str, tuple[str, ...]] | None = None,
) -> None:
    """Both profiles (or those ``profiles`` names for a candidate) for every candidate, in order,
    through a sandbox server on loopback: sequentially on a GPU (so that each latency is one
    evaluation's), two at a time on the CPU's two workers."""
    from services.sandbox.client import LocalSandbox  # starts nothing on import, but slow to import

    workers = 2 if device == "cpu" else 1
    device_enum = common_pb2.DEVICE_CPU if device == "cpu" else common_pb2.DEVICE_CUDA
    requests = [
        request(c, tasks[c.problem.key], profile, device_enum, timeout)
        for c in cands
        for profile in (profiles or {}).get(c.name, tuple(PROFILES))
    ]
    # A work directory of its own: no compiled-kernel cache entries from other runs or versions.
    with tempfile.TemporaryDirectory(prefix="kernelbench-parity-") as work_dir:
        sandbox = LocalSandbox(
            device=device,
            cpu_workers=workers,
            default_timeout_seconds=timeout,
            max_timeout_seconds=max(timeout, 1800.0),
            work_dir=Path(work_dir),
        )
        try:
            judge_drkernel(sandbox, requests, in_flight=workers, timeout=timeout + 600, on_result=on_result)
        finally:
            sandbox.stop()


def import_kernelbench_eval(kernelbench_dir: Path) -> tuple[types.ModuleType, list[str]]:
    """Imports ``kernelbench.eval`` from the checkout, stubbing each module that it (or
    ``kernelbench/__init__``) imports but that is not installed; returns it and the stubs."""
    sys.path.insert(0, str(kernelbench_dir / "src"))
    stubbed: list[str] = []
    while True:
        try:
            return importlib.import_module("kernelbench.eval"), stubbed
        except ModuleNotFoundError as error:
            missing = error.name or ""
            if not missing or missing in stubbed or missing.split(".")[0] in ESSENTIAL_MODULES:
                raise
            for name in [m for m in sys.modules if m == "kernelbench" or m.startswith("kernelbench.")]:
                del sys.modules[name]
            sys.modules[missing] = _stub_module(missing)
            stubbed.append(missing)


def _stub_module(name: str) -> types.ModuleType:
    """A module whose every attribute is a class that may be instantiated or called (module
    level calls such as ``load_dotenv()`` do nothing) but whose instances refuse any use."""

    class Unavailable:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def __getattr__(self, attribute: str) -> object:
            raise RuntimeError(f"{name} is stubbed out by kernelbench_parity.py")

    def attribute_of(attribute: str) -> type:
        if attribute.startswith("__"):  # __file__, __path__, ...: introspection must see a plain module
            raise AttributeError(attribute)
        return Unavailable

    module = types.ModuleType(name)
    module.__getattr__ = attribute_of  # type: ignore[method-assign]
    return module


def kernelbench_worker(
    kernelbench_dir: str,
    task_source: str,
    candidate_source: str,
    perf_trials: int,
    connection: Any,
) -> None:
    """Child process: one ``eval_kernel_against_ref`` call; sends (result dict, stubs) back.
    KernelBench prints to stdout, which goes to stderr here so the table stays clean."""
    with contextlib.redirect_stdout(sys.stderr):
        kb_eval, stubbed = import_kernelbench_eval(Path(kernelbench_dir))
        import torch

        wanted = dict(
            seed_num=42,
            num_correct_trials=KB_CORRECT_TRIALS,
            num_perf_trials=perf_trials,
            measure_performance=True,
            timing_method="cuda_event",
            verbose=False,
            device=0,
            backend="triton",
            precision=torch.float32,
        )
        accepted = inspect.signature(kb_eval.eval_kernel_against_ref).parameters
        kwargs = {k: v for k, v in wanted.items() if k in accepted}
        start = time.perf_counter()
        try:
            outcome = kb_eval.eval_kernel_against_ref(task_source, candidate_source, **kwargs)
            timed = outcome.runtime > 0 and outcome.ref_runtime > 0
            result = KernelBenchResult(
                compiled=outcome.compiled,
                correctness=outcome.correctness,
                runtime_us=outcome.runtime,
                ref_runtime_us=outcome.ref_runtime,
                speedup=outcome.ref_runtime / outcome.runtime if timed else 0.0,
                metadata=json.loads(json.dumps(outcome.metadata, default=str)),
            )
        except Exception as error:  # noqa: BLE001 - KernelBench's own failure is a result of the comparison
            result = KernelBenchResult(harness_error=f"{type(error).__name__}: {error}"[:2000])
        result.wall_seconds = time.perf_counter() - start
        result.metadata["kwargs"] = sorted(kwargs)
    connection.send((asdict(result), stubbed))
    connection.close()


def judge_kernelbench_one(
    kernelbench_dir: Path,
    task_source: str,
    candidate_source: str,
    timeout: float,
    perf_trials: int,
) -> tuple[KernelBenchResult, list[str]]:
    """Runs ``kernelbench_worker`` in a fresh spawned process with a deadline."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(
        target=kernelbench_worker,
        args=(str(kernelbench_dir), task_source, candidate_source, perf_trials, sender),
    )
    process.start()
    sender.close()
    try:
        if receiver.poll(timeout):
            fields, stubbed = receiver.recv()
            return KernelBenchResult(**fields), stubbed
        return KernelBenchResult(harness_error=f"no result within {timeout:.0f} s"), []
    except EOFError:
        process.join(30)
        return KernelBenchResult(harness_error=f"process died, exit code {process.exitcode}"), []
    finally:
        if process.is_alive():
            process.kill()
        process.join()


def run_kernelbench(
    cands: list[Candidate],
    tasks: dict[str, str],
    kernelbench_dir: Path,
    timeout: float,
    perf_trials: int,
    workers: int,
    on_result: Callable[[str, KernelBenchResult, list[str]], None],
) -> None:
    """One KernelBench evaluation per candidate, ``workers`` processes at a time (more than one
    shares the GPU, so its latencies and speedups are then not one evaluation's alone);
    ``on_result`` gets each result with the modules stubbed as it comes."""

    def one(candidate: Candidate) -> None:
        task = tasks[candidate.problem.key]
        result, stubbed = judge_kernelbench_one(kernelbench_dir, task, candidate.path.read_text(), timeout, perf_trials)
        on_result(candidate.name, result, stubbed)
        progress.set_postfix_str(f"{candidate.name}: {'correct' if result.correctness else 'not correct'}")
        progress.update()

    with (
        tqdm(total=len(cands), desc="KernelBench", file=sys.stderr) as progress,
        concurrent.futures.ThreadPoolExecutor(workers) as pool,
    ):
        list(pool.map(one, cands))


def kernelbench_word(result: KernelBenchResult | None) -> str:
    """KernelBench's answer in one word for the table ("n/a" when its harness did not run)."""
    if result is None:
        return "n/a"
    if result.harness_error:
        return "ERROR"
    if not result.compiled:
        return "NO_COMPILE"
    return "correct" if result.correctness else "incorrect"


def note(row: Row, shrunk: bool) -> str:
    """What the row shows: agreement, an expected stricter check, or an unexpected answer."""
    answers = {profile: result.correct for profile, result in row.drkernel.items()}
    if row.kernelbench is not None:
        answers["KernelBench"] = row.kernelbench.correctness and not row.kernelbench.harness_error
    unexpected = [
        f"{judge} {'accepts' if correct else 'rejects'}"
        for judge, correct in answers.items()
        if row.expected_correct[judge] not in (None, correct)
    ]
    unexpected += [
        f"{profile} profile not applied ({result.profile_applied})"
        for profile, result in row.drkernel.items()
        if result.profile_applied and result.profile_applied != pb.CorrectnessProfile.Name(PROFILES[profile])
    ]
    if unexpected:
        return "UNEXPECTED: " + ", ".join(unexpected)
    if row.flaw_kind is None:
        return "agree"
    blind = [judge for judge, correct in answers.items() if correct]
    if blind:
        where = " at the task's shape" if row.flaw_kind in SHAPE_KINDS and not shrunk else ""
        return f"expected: {'/'.join(blind)} blind to {row.flaw_kind}{where}"
    return "agree"


def print_table(rows: list[Row]) -> None:
    """The agreement table, one candidate a line, then a summary and a legend."""
    width = max(len(r.candidate) for r in rows) + 1
    print(
        f"{'candidate':<{width}} {'defect':<60} {'expect':<11} {'strict':<14} {'kb-profile':<14} "
        f"{'KernelBench':<11} {'speedup':>7} {'kb-speedup':>10}  note"
    )
    for r in rows:
        defect = f"{r.flaw_kind}: {r.flaw}" if r.flaw_kind else "(honest)"
        expect = "correct" if r.flaw_kind is None else "incorrect"
        strict = r.drkernel.get("strict")
        speedup = f"{strict.speedup:.3f}" if strict and strict.speedup else "-"
        kb_speedup = f"{r.kernelbench.speedup:.3f}" if r.kernelbench and r.kernelbench.speedup else "-"
        verdicts = [r.drkernel[p].verdict.removeprefix("VERDICT_") if p in r.drkernel else "n/a" for p in PROFILES]
        print(
            f"{r.candidate:<{width}} {defect[:60]:<60} {expect:<11} {verdicts[0]:<14} {verdicts[1]:<14} "
            f"{kernelbench_word(r.kernelbench):<11} {speedup:>7} {kb_speedup:>10}  {r.note}"
        )
    unexpected = sum(r.note.startswith("UNEXPECTED") for r in rows)
    print(
        f"{len(rows)} candidates, {unexpected} unexpected. strict, kb-profile: drkernel's verdicts under "
        "CORRECTNESS_PROFILE_STRICT and _KERNELBENCH; KernelBench: eval_kernel_against_ref; speedup: drkernel "
        "(strict), kb-speedup: KernelBench's ref_runtime / runtime; 'expected: X blind to K' marks a documented "
        "disagreement (a flaw of kind K that judge X does not look for)."
    )


def task_sources(problems: list[Problem], kernelbench_dir: Path, shrink: bool) -> dict[str, str]:
    """Each problem file's text by key: unchanged, or with its size constants shrunk."""
    tasks = {}
    for problem in problems:
        path = kernelbench_dir / "KernelBench" / problem.level / f"{problem.stem}.py"
        source = path.read_text()
        tasks[problem.key] = with_constants(source, problem.shrink) if shrink else source
    return tasks


def git_commit(directory: Path) -> str:
    """The checkout's commit, or "" when it is not the top of a git work tree (e.g. a ``git
    archive`` extracted inside another repository)."""
    done = subprocess.run(
        ["git", "-C", str(directory), "rev-parse", "--show-toplevel", "HEAD"], capture_output=True, text=True
    )
    lines = done.stdout.split()
    return lines[1] if done.returncode == 0 and Path(lines[0]) == directory.resolve() else ""


def merge(rows: dict[str, Row], report: dict[str, Any]) -> None:
    """Fills in each row's results from an earlier report's row of the same candidate (the
    first report to have one wins). A KernelBench run that ran out of device memory (runs
    sharing the GPU) says nothing about the kernel and is left out."""
    for earlier in report["rows"]:
        row = rows.get(earlier["candidate"])
        if row is None:
            continue
        for profile, result in earlier["drkernel"].items():
            row.drkernel.setdefault(profile, DrkernelResult(**result))
        kernelbench = earlier["kernelbench"]
        if (
            row.kernelbench is None
            and kernelbench is not None
            and "out of memory" not in json.dumps(kernelbench).lower()
        ):
            row.kernelbench = KernelBenchResult(**kernelbench)


def save(path: Path, args: argparse.Namespace, rows: list[Row], stubs: list[str]) -> None:
    """Writes the report atomically (it is written after each harness)."""
    document = {
        "device": args.device,
        "shrink": args.shrink,
        "kernelbench": str(args.kernelbench.resolve()),
        "kernelbench_commit": git_commit(args.kernelbench),
        "kernelbench_stubbed_modules": stubs,
        "kernelbench_correct_trials": KB_CORRECT_TRIALS,
        "kernelbench_perf_trials": args.kb_perf_trials,
        "kernelbench_workers": args.kb_workers,
        "concurrent": args.concurrent,
        "rows": [asdict(r) for r in rows],
    }
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as handle:
        json.dump(document, handle, indent=1)
    os.replace(handle.name, path)


def select(problems: str, named: str, problem_set: str = "") -> tuple[list[Candidate], dict[str, tuple[str, ...]]]:
    """The candidates to judge, in order, and the drkernel profiles for each: every candidate of
    each problem of ``problem_set`` (a key of PROBLEM_SETS) and of ``problems`` (comma-separated
    keys), then each of ``named`` (comma-separated candidate names, each optionally ending in
    ``#strict`` or ``#kernelbench`` for that profile alone; a name given twice with different
    profiles gets both). None given: every problem."""
    by_key = {p.key: p for p in PROBLEMS}
    if problem_set and problem_set not in PROBLEM_SETS:
        raise SystemExit(f"unknown problem set {problem_set!r} (one of {', '.join(PROBLEM_SETS)})")
    keys = [p.key for p in PROBLEM_SETS.get(problem_set, ())] + [k for k in problems.split(",") if k]
    entries = [n for n in named.split(",") if n]
    if not keys and not entries:
        keys = list(by_key)
    unknown = [k for k in keys if k not in by_key]
    if unknown:
        raise SystemExit(f"not in PROBLEMS: {', '.join(unknown)}")
    chosen: dict[str, Candidate] = {}
    profiles: dict[str, tuple[str, ...]] = {}
    for key in keys:
        for candidate in candidates(by_key[key]):
            chosen.setdefault(candidate.name, candidate)
            profiles[candidate.name] = tuple(PROFILES)
    known = {c.name: c for p in PROBLEMS for c in candidates(p)}
    for entry in entries:
        name, _, profile = entry.partition("#")
        if name not in known:
            raise SystemExit(f"no such candidate: {name} (names are <level>/<file stem>, e.g. level1/19_ReLU__hack)")
        if profile and profile not in PROFILES:
            raise SystemExit(f"unknown profile {profile!r} in {entry} (one of {', '.join(PROFILES)})")
        chosen.setdefault(name, known[name])
        wanted = (profile,) if profile else tuple(PROFILES)
        profiles[name] = tuple(p for p in PROFILES if p in profiles.get(name, ()) or p in wanted)
    return list(chosen.values()), profiles


def parse_args() -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--kernelbench", type=Path, required=True, help="KernelBench checkout (its KernelBench/ problems and src/)."
    )
    parser.add_argument("--out", type=Path, required=True, help="Directory for kernelbench_parity.json.")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument(
        "--shrink", action="store_true", help="Shrink every task's size constants (for the CPU interpreter)."
    )
    parser.add_argument(
        "--set",
        dest="problem_set",
        choices=tuple(PROBLEM_SETS),
        default="",
        help="A named set of problems: all, or fast (every problem but those whose inputs are so large "
        "that KernelBench's harness needs 90-130 s per candidate); --problems adds to it.",
    )
    parser.add_argument("--problems", default="", help="Comma-separated keys (level1/19_ReLU,...); default: all.")
    parser.add_argument(
        "--candidates",
        default="",
        help="Comma-separated candidates (level2/59_Matmul_Swish_Scaling__nomask,...), judged in this "
        "order after those of --problems; NAME#strict or NAME#kernelbench: that drkernel "
        "profile only. Only the candidates chosen get rows in the report.",
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="Seconds per evaluation, for each harness.")
    parser.add_argument(
        "--kb-perf-trials",
        type=int,
        default=KB_PERF_TRIALS,
        help="KernelBench's timed trials per evaluation (its run_and_check.py uses 100).",
    )
    parser.add_argument(
        "--kb-workers",
        type=int,
        default=1,
        help="KernelBench evaluations at a time on the GPU (latencies then include sharing).",
    )
    parser.add_argument(
        "--judges",
        choices=("both", "drkernel", "kernelbench"),
        default="both",
        help="Which harnesses this run uses (KernelBench's alone needs hours at full size: "
        "split the work over runs and --merge their reports).",
    )
    parser.add_argument(
        "--concurrent",
        action="store_true",
        help="Run KernelBench's harness at the same time as drkernel (both share the GPU: "
        "latencies and speedups include it); for --set fast, whose problems fit in memory twice.",
    )
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="*",
        default=[],
        help="Earlier reports (kernelbench_parity.json) whose results fill in, per candidate, "
        "what this run does not judge.",
    )
    args = parser.parse_args()
    if args.device == "cuda" and args.shrink:
        parser.error("--shrink is for --device cpu (KernelBench's harness must see the tasks unchanged)")
    return args


def main() -> int:
    args = parse_args()
    from drkernel.logs import configure_logging
    from drkernel.sections import LogSettings

    configure_logging(LogSettings(level="warning", format="console"))
    cands, profiles = select(args.problems, args.candidates, args.problem_set)
    problems = list({c.problem.key: c.problem for c in cands}.values())
    tasks = task_sources(problems, args.kernelbench, args.shrink)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / "kernelbench_parity.json"
    rows = {
        c.name: Row(
            c.name,
            c.problem.key,
            c.flaw_kind,
            c.flaw,
            c.kernelbench_expect,
            {judge: c.expected_correct(judge, args.shrink) for judge in JUDGES},
        )
        for c in cands
    }
    print(f"{len(problems)} problems, {len(cands)} candidates, device {args.device}", file=sys.stderr)
    if args.judges != "kernelbench":
        for c in cands:
            print(f"  {c.name}: {', '.join(profiles[c.name])}", file=sys.stderr)
    stubs: set[str] = set()
    lock = threading.Lock()

    def saved() -> None:  # after every result: a run cut by its time limit keeps what it judged
        save(out, args, list(rows.values()), sorted(stubs))

    def drkernel_done(request_id: str, result: DrkernelResult) -> None:
        name, profile = request_id.split("#")
        with lock:
            rows[name].drkernel[profile] = result
            saved()

    def kernelbench_done(name: str, result: KernelBenchResult, stubbed: list[str]) -> None:
        with lock:
            rows[name].kernelbench = result
            stubs.update(stubbed)
            saved()

    for report in args.merge:
        merge(rows, json.loads(report.read_text()))
    # What a merged report already holds is not judged again: merging the run's own report
    # resumes a run that its time limit cut.
    for name, row in rows.items():
        profiles[name] = tuple(p for p in profiles[name] if p not in row.drkernel)
    drkernel_cands = [c for c in cands if profiles[c.name]]
    kernelbench_cands = [c for c in cands if rows[c.name].kernelbench is None]

    def drkernel_side() -> None:
        if args.judges in ("both", "drkernel") and drkernel_cands:
            run_drkernel(drkernel_cands, tasks, args.device, args.timeout, drkernel_done, profiles)

    def kernelbench_side() -> None:
        if args.device == "cuda" and args.judges in ("both", "kernelbench") and kernelbench_cands:
            run_kernelbench(
                kernelbench_cands,
                tasks,
                args.kernelbench,
                args.timeout,
                args.kb_perf_trials,
                args.kb_workers,
                kernelbench_done,
            )

    if args.concurrent:
        # Both harnesses at once on one GPU: their latencies and speedups then include the
        # sharing (the report says so); only for problems whose memory fits twice (--set fast).
        other = threading.Thread(target=kernelbench_side, name="kernelbench")
        other.start()
        drkernel_side()
        other.join()
    else:  # one after the other: KernelBench's harness alone holds up to 43 GiB on the largest problems
        drkernel_side()
        kernelbench_side()
    with lock:
        for c in cands:
            rows[c.name].note = note(rows[c.name], args.shrink)
        saved()
    print(f"wrote {out}", file=sys.stderr)
    print_table(list(rows.values()))
    return 1 if any(r.note.startswith("UNEXPECTED") for r in rows.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
