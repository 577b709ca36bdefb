"""The judge holds no more of a candidate's reply than the outputs it expects, holds a payload
once, compares without full-size copies, and runs under an address-space limit on CPU."""

from __future__ import annotations

import socket
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.judge.candidate_client import CandidateClient, CandidateLost
from services.sandbox.judge.compare import compare_outputs
from services.sandbox.judge.funnel import Evaluation
from services.sandbox.judge.memory import Footprint
from services.sandbox.judge.variants import Variant, VariantPlanner
from services.sandbox.server.servicer import RunningSandbox
from services.sandbox.settings import SandboxSettings, Tolerance
from services.sandbox.shared.evaluation import InputVariant
from services.sandbox.wire import framing
from services.sandbox.wire.framing import receive, send
from services.sandbox.wire.judge_candidate import (
    COMMAND,
    CompileCheck,
    CompileResult,
    Run,
    RunResult,
    RunSpec,
    TensorMeta,
)
from services.sandbox.wire.tensors import pack_tensors, unpack_tensors
from tests.sandbox.conftest import evaluate, source

MiB = 2**20
EXTRA_BYTES = 512 * MiB
FP32 = Tolerance(atol=1e-2, rtol=1e-2, max_rel_l2=1.5e-3)


# Peak memory of a process --------------------------------------------------------------------


def reset_peak(pid: int | str = "self") -> int:
    """Resets the process's peak resident set (VmHWM) to its current one, in bytes."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return peak(pid)


def peak(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


# The client over a socket pair, with a hand-made candidate ------------------------------------


def stream_reply(sock: socket.socket, message: RunResult, payload_bytes: int, chunk: bytes = b"\0" * MiB) -> None:
    """Sends a reply whose payload is streamed from one small buffer (this side never holds it)."""
    header = message.model_dump_json().encode()
    sock.sendall(framing._PREFIX.pack(len(header), payload_bytes) + header)
    while payload_bytes:
        payload_bytes -= sock.send(memoryview(chunk)[: min(payload_bytes, len(chunk))])


def result(*shapes: tuple[int, ...]) -> RunResult:
    outputs = [TensorMeta(dtype="float32", shape=list(s), nbytes=4 * torch.Size(s).numel()) for s in shapes]
    return RunResult(
        outputs=outputs, launches=[], problems=[], tampered=[], seconds=0.0, output_strides=[[1]] * len(shapes)
    )


@pytest.fixture
def pair() -> Iterator[tuple[CandidateClient, socket.socket]]:
    judge_side, candidate_side = socket.socketpair()
    client = CandidateClient(judge_side, 2**35, torch.device("cpu"), end_sandbox=lambda: None, started=lambda: None)
    yield client, candidate_side
    judge_side.close()
    candidate_side.close()


def fake_candidate(
    sock: socket.socket, replies: list[tuple[RunResult, int]], compile_check: bool = True
) -> threading.Thread:
    """Answers Run commands with the given replies, then one CompileCheck."""

    def serve() -> None:
        for message, payload_bytes in replies:
            command, _ = receive(sock, COMMAND, 0)
            assert isinstance(command, Run)
            stream_reply(sock, message, payload_bytes)
        if compile_check:
            command, _ = receive(sock, COMMAND, 0)
            assert isinstance(command, CompileCheck)
            send(sock, CompileResult(kernels=[]))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_an_extra_output_is_judged_from_its_metadata_and_never_held(pair):
    client, candidate = pair
    expected = [torch.zeros(4)]
    thread = fake_candidate(candidate, [(result((4,), (EXTRA_BYTES // 4,)), 16 + EXTRA_BYTES), (result((4,)), 16)])
    before = reset_peak()
    run = client.run(RunSpec(), 0.0, expected=expected)
    grown = peak() - before
    assert [tuple(t.shape) for t in run.outputs] == [(4,), (EXTRA_BYTES // 4,)] and all(t.is_meta for t in run.outputs)
    comparison = compare_outputs(run.outputs, expected, [torch.float32], FP32)
    assert not comparison.passed and comparison.message == "forward returned 2 output(s), expected 1"
    assert grown < 32 * MiB, (
        f"the judge's peak grew by {grown / MiB:.0f} MiB for a {EXTRA_BYTES // MiB} MiB extra output"
    )
    # the conversation stayed in step: the next reply is read as usual
    assert torch.equal(client.run(RunSpec(), 0.0, expected=expected).outputs[0], torch.zeros(4))
    assert client.compile_check() == []
    thread.join(10)


@pytest.mark.parametrize(
    ("shape", "dtype", "message"), [((5,), "float32", "has shape"), ((4,), "float64", "has dtype")]
)
def test_wrong_shapes_and_dtypes_are_mismatches_not_failures(pair, shape, dtype, message):
    client, candidate = pair
    nbytes = torch.Size(shape).numel() * torch.empty((), dtype=getattr(torch, dtype)).element_size()
    wrong = result(shape).model_copy(update={"outputs": [TensorMeta(dtype=dtype, shape=list(shape), nbytes=nbytes)]})
    thread = fake_candidate(candidate, [(wrong, nbytes)])
    run = client.run(RunSpec(), 0.0, expected=[torch.zeros(4)])
    assert message in compare_outputs(run.outputs, [torch.zeros(4)], [torch.float32], FP32).message
    assert client.compile_check() == []
    thread.join(10)


def test_a_payload_larger_than_matching_outputs_is_refused_unread(pair):
    client, candidate = pair
    header = result((4,)).model_dump_json().encode()

    def reply() -> None:
        receive(candidate, COMMAND, 0)
        candidate.sendall(framing._PREFIX.pack(len(header), 16 + EXTRA_BYTES) + header)  # and no payload

    threading.Thread(target=reply, daemon=True).start()
    with pytest.raises(CandidateLost, match="payload bytes, where its tensors fill 16"):
        client.run(RunSpec(), 0.0, expected=[torch.zeros(4)])


def test_inputs_handed_back_count_only_when_allowed(pair):
    client, candidate = pair
    handed = result((4,), (3,)).model_copy(update={"output_strides": [[1]], "modified_inputs": [1]})
    thread = fake_candidate(candidate, [(handed, 28), (handed, 28)], compile_check=False)
    run = client.run(RunSpec(), 0.0, expected=[torch.zeros(4)], mutable_inputs={1: torch.zeros(3)})
    assert [tuple(t.shape) for t in run.outputs] == [(4,), (3,)] and not any(t.is_meta for t in run.outputs)
    with pytest.raises(CandidateLost, match="not among those allowed"):
        client.run(RunSpec(), 0.0, expected=[torch.zeros(4)], mutable_inputs={0: torch.zeros(3)})
    thread.join(10)


def test_unpacked_tensors_are_views_of_the_payload():
    tensors = [torch.arange(6, dtype=torch.float32), torch.ones(3, dtype=torch.float64)]
    metas, payload, _, _ = pack_tensors(tensors)
    buffer = bytearray(payload)
    back = unpack_tensors(metas, buffer)
    assert all(torch.equal(a, b) for a, b in zip(back, tensors, strict=True))
    buffer[:4] = torch.tensor([42.0]).numpy().tobytes()
    assert back[0][0] == 42.0  # the same memory, not a copy


@pytest.fixture
def one_thread() -> Iterator[None]:
    """As in the judge on CPU (and many small parallel regions crawl on a loaded host)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_large_outputs_are_compared_without_full_size_temporaries(one_thread):
    want = torch.randn(64, 2**20).t()  # 256 MiB, not contiguous
    got = want.contiguous()
    got[7, 3] += 1.0
    before = reset_peak()
    comparison = compare_outputs([got], [want], [torch.float32], FP32)
    grown = peak() - before
    assert (
        not comparison.passed
        and f"1 of {want.numel()} elements" in comparison.message
        and "(7, 3)" in comparison.message
    )
    # one chunk's temporaries and the allocator's slack (before: 3.8 GiB for 256 MiB outputs)
    assert grown < 64 * MiB, f"comparing 256 MiB outputs took {grown / MiB:.0f} MiB more"


def test_complex_outputs_are_compared_in_both_parts():
    want = torch.randn(16, dtype=torch.complex64)
    assert compare_outputs([want.clone()], [want], [torch.complex64], FP32).passed
    assert not compare_outputs([want.real.to(torch.complex64)], [want], [torch.complex64], FP32).passed


# Through a real server ----------------------------------------------------------------------


def judge_pids(sandbox: RunningSandbox) -> list[int]:
    """The judge processes of the CPU workers: the interpreters inside their sandboxes."""
    pids = []
    for worker in sandbox.scheduler.workers["cpu"]:
        pending = [worker._judge.process.pid]
        while pending:
            pid = pending.pop()
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if argv[0].decode() == sys.executable and b"services.sandbox.judge" in argv:
                pids.append(pid)
                break
            for task in Path(f"/proc/{pid}/task").iterdir():
                pending.extend(int(child) for child in (task / "children").read_text().split())
    return pids


EXTRA_OUTPUT = source("relu_triton.py").replace(
    "        return y",
    f"        return y, torch.ones({EXTRA_BYTES // 4})  # correct, plus {EXTRA_BYTES // MiB} MiB more",
)


@pytest.mark.slow
def test_a_large_extra_output_is_incorrect_and_the_judge_never_holds_it(sandbox, sandbox_stub):
    judges = judge_pids(sandbox)
    assert len(judges) == len(sandbox.scheduler.workers["cpu"])
    for pid in judges:
        limits = Path(f"/proc/{pid}/limits").read_text()
        assert f"Max address space         {sandbox.scheduler.settings.isolation.judge_memory_bytes}" in limits
    before = {pid: reset_peak(pid) for pid in judges}
    response = evaluate(sandbox_stub, "relu_task.py", EXTRA_OUTPUT)
    grown = max(peak(pid) - before[pid] for pid in judges)
    assert response.verdict == pb.VERDICT_INCORRECT, response.error
    assert "returned 2 output(s), expected 1" in response.error
    assert grown < 128 * MiB, (
        f"a judge's peak grew by {grown / MiB:.0f} MiB for a {EXTRA_BYTES // MiB} MiB extra output"
    )


# Planning a variant into device memory ----------------------------------------------------------


def test_a_footprint_is_measured_once_per_sizes_and_dtype() -> None:
    """Seeds and input scales change values, not bytes: one reference run per size and dtype."""
    runs: list[RunSpec] = []

    def reference_run(spec: RunSpec) -> types.SimpleNamespace:
        runs.append(spec)
        return types.SimpleNamespace(weight_bytes=8, input_bytes=16, outputs=[torch.zeros(4)])

    evaluation = types.SimpleNamespace(_footprints={}, reference_run=reference_run)
    task = RunSpec(input_seed=1)
    first = Evaluation.footprint(evaluation, task)  # type: ignore[arg-type]
    assert Evaluation.footprint(evaluation, RunSpec(input_seed=2, weight_seed=5, scale=2.0)) == first  # type: ignore[arg-type]
    assert first == Footprint(8, 16, 16) and len(runs) == 1
    Evaluation.footprint(evaluation, RunSpec(dtype="bfloat16"))  # type: ignore[arg-type]
    Evaluation.footprint(evaluation, RunSpec(constants=(("n", 2),)))  # type: ignore[arg-type]
    assert len(runs) == 3


class _Planned:
    """Stands in for the evaluation around the planner (named fake): a device of 80 GiB with
    60 free, calls whose footprint halves with each halving of the size ``n``."""

    def __init__(self) -> None:
        self.settings = SandboxSettings()
        self.plan = types.SimpleNamespace(shrink=True, name="strict")
        self.task = types.SimpleNamespace(sizes=lambda _minimum: {"n": 1024})
        self.device = torch.device("cuda")
        self.reference = types.SimpleNamespace(drop_cache=lambda keep=None: 0)

    def footprint(self, spec: RunSpec) -> Footprint:
        n = dict(spec.constants).get("n", 1024)
        return Footprint(0, n * 8 * 2**20, n * 8 * 2**20)  # 8 GiB each at the task's sizes

    def free_bytes(self) -> int:
        return 60 * 2**30

    def device_bytes(self) -> int:
        return 80 * 2**30


def test_variants_beside_the_tasks_own_inputs_plan_with_a_share_of_the_device() -> None:
    planner = VariantPlanner(_Planned())  # type: ignore[arg-type]
    spec = RunSpec(input_seed=1)
    original = Variant(InputVariant.ORIGINAL, "task sizes", spec, spec)
    assert planner.fitted(original) == original  # about 46 GiB: fits in the 60 free
    seed = Variant(InputVariant.SEED, "seed 2", spec, spec)
    fitted = planner.fitted(seed)  # 12 GiB allowed (0.15 of 80): halved until it fits
    assert dict(fitted.candidate.constants) == {"n": 128}
    assert "shrunk to fit device memory" in fitted.description and "available to it" in fitted.description


def test_a_shrunk_odd_size_stays_odd_and_the_share_alone_never_drops_the_judges_caches() -> None:
    # The resized variant's odd sizes find a kernel that leaves its last block unmasked; an
    # even half of them (1536 of 3073) is a multiple of every power-of-two block size up to 512.
    planned = _Planned()
    dropped: list[bool] = []
    planned.reference = types.SimpleNamespace(drop_cache=lambda keep=None: dropped.append(True) or 0)
    planner = VariantPlanner(planned)  # type: ignore[arg-type]
    spec = RunSpec(input_seed=1, constants=(("n", 769),))
    fitted = planner.fitted(Variant(InputVariant.RESIZED, "n=769", spec, spec))
    assert dict(fitted.candidate.constants) == {"n": 193}  # 769, 385, 193: odd at every step
    assert not dropped  # 60 GiB free, 12 allowed: freeing the judge's caches could not help


class _CachedRuns:
    """The judge's cached reference results (named fake): ``held`` bytes, of which the run
    of the variant being planned is ``own``."""

    def __init__(self, held: int, own: int) -> None:
        self.held, self.own, self.drops = held, own, []

    def drop_cache(self, keep: RunSpec | None = None) -> int:
        self.drops.append(keep)
        self.held = self.own if keep is not None else 0
        return self.held


@pytest.mark.parametrize("spare", [2, -20], ids=["fits", "does-not-fit"])
def test_dropping_the_judges_caches_keeps_the_run_the_variant_checks_against(spare: int) -> None:
    """The footprint ran the variant's reference; dropping every cached result ran it again
    (a full-size KernelBench reference, 0.2 s). It is kept, as the judge's copy of the outputs
    the need counts, and dropped too where the variant must be shrunk anyway."""
    gib = 2**30
    planned = _Planned()
    spec = RunSpec(input_seed=1)
    need = planned.footprint(spec).need_bytes()
    cache = _CachedRuns(held=20 * gib, own=8 * gib)
    everything_freed = need + spare * gib
    planned.reference = cache
    planned.free_bytes = lambda: everything_freed - cache.held  # type: ignore[method-assign]
    fitted = VariantPlanner(planned).fitted(Variant(InputVariant.ORIGINAL, "task sizes", spec, spec))  # type: ignore[arg-type]
    if spare > 0:
        assert fitted.candidate == spec and cache.drops == [spec]
    else:
        assert dict(fitted.candidate.constants)["n"] < 1024 and cache.drops == [spec, None]
