"""The funnel's verdict table, judged in-process with a fake candidate client.

The server tests judge real candidates in sandboxed processes, which takes seconds per
candidate; these drive ``Evaluation`` (judge/funnel.py) directly, on CPU, against a real
``Reference`` and a fake ``CandidateClient`` whose outputs come from the task's own model
(honest) or from that plus an error, with the launches, problems and failures each row
needs. No process, socket or Triton kernel runs, so every row of the table takes
milliseconds and pins down which verdict the funnel decides, and at which stage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pytest
import torch

from services.sandbox.judge.candidate_client import CandidateClient, CandidateLost, CandidateRun
from services.sandbox.judge.funnel import Evaluation, _layout_message
from services.sandbox.judge.reference import OutputCache, Reference
from services.sandbox.judge.stages import NotJudged, Stop
from services.sandbox.judge.work import unasked
from services.sandbox.settings import SandboxSettings
from services.sandbox.shared.clock import Clock
from services.sandbox.shared.evaluation import (
    EvaluationOptions,
    EvaluationRequest,
    Judgement,
    Stage,
    StageStatus,
    Verdict,
)
from services.sandbox.shared.task_source import parse_task
from services.sandbox.tasks import builtin_task
from services.sandbox.wire.judge_candidate import (
    CandidateFailed,
    KernelCompile,
    LaunchRecord,
    Loaded,
    Problem,
    ProfiledKernel,
    PyTorchMatch,
    RunResult,
    RunSpec,
    TensorMeta,
    Unwatched,
    Wrote,
)

TASK_SOURCE = builtin_task("l1_relu").source()
CANDIDATE_SOURCE = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n"
KERNEL = "relu_kernel"
OWN_LAUNCH = LaunchRecord(name=KERNEL, own=True, programs=4, stored_bytes=1024, wrote="data")


def gpu_launch(wrote: Wrote | None = None, unwatched: Unwatched | None = None) -> LaunchRecord:
    """An own launch as a GPU's harness records it: a compiled kernel on a stream, no byte count."""
    return LaunchRecord(name=KERNEL, own=True, programs=4, stream=7, wrote=wrote, unwatched=unwatched)


@dataclass(frozen=True)
class Behaviour:
    """What the fake candidate does: by default an honest one, whose own Triton kernel
    computes outputs equal to the reference's (destroyed when the kernel is knocked out)."""

    lost_at_start: bool = False
    load_failure: CandidateFailed | None = None
    failed_compile: tuple[KernelCompile, ...] = ()
    error: float = 0.0  # added to every output
    launches: tuple[LaunchRecord, ...] = (OWN_LAUNCH,)
    problems: tuple[Problem, ...] = ()
    right_when_knocked_out: bool = False  # outputs that do not come from its kernels
    right_when_zeroed: bool = False  # its kernels' results cancel out: only other values move the output
    knocked_out_share: float = 1.0  # of the output's elements that move when knocked out
    fails_when_knocked_out: bool = False  # a check on its kernels' results raises
    pytorch_result: float | None = None  # reports a PyTorch result this far from the output (trace)
    pytorch_outputs: tuple[int, ...] = (0,)  # the outputs such a result is reported for
    pytorch_profiled: bool = True  # made by a PyTorch operator (not from NumPy, not out of sight)
    unseen: bool = False  # reports an output nothing it traced wrote
    outside: tuple[str, ...] = ()  # reports data made out of the trace's sight
    lost_at_run: bool = False
    exact_zeros: bool = False  # outputs of exactly 0 in place of the reference's
    bypasses_probe: bool = False  # its kernels run without the harness asking whether to knock them out


@dataclass
class FakeCandidate:
    """The calls the funnel makes on a CandidateClient (timing and profile skipped), answered
    in-process: outputs from the task's model run by a Reference of the fake's own."""

    model: Reference
    behaviour: Behaviour
    calls: list[str] = field(default_factory=list)

    def ready(self) -> None:
        self.calls.append("ready")
        if self.behaviour.lost_at_start:
            raise CandidateLost("the process exited before it was ready")

    def load(
        self,
        candidate_source: str,
        inputs_source: str,
        spec: RunSpec,
        meanwhile: Callable[[], None] = lambda: None,
        *,
        profile: bool = False,
    ) -> Loaded:
        self.calls.append("load")
        meanwhile()  # as the real client: the judge's reference runs while the candidate loads
        if self.behaviour.load_failure is not None:
            raise self.behaviour.load_failure
        return Loaded(parameters=0, device_name="cpu")

    def run(
        self,
        spec: RunSpec,
        late_write_wait_seconds: float,
        *,
        knock_out: Callable[[str], bool] = lambda _kernel: False,
        zeros: bool = False,
        expected: list[torch.Tensor] | None = None,
        expected_dtypes: list[torch.dtype] | None = None,
        mutable_inputs: dict[int, torch.Tensor] | None = None,
    ) -> CandidateRun:
        if self.behaviour.lost_at_run:
            raise CandidateLost("connection reset by peer")
        outputs = [t.clone() + self.behaviour.error for t in self.model.run(spec).outputs]
        if self.behaviour.exact_zeros:
            outputs = [torch.zeros_like(t) for t in outputs]
        # as the harness: the judge is asked after the first launch of each own kernel
        asked = (
            set()
            if self.behaviour.bypasses_probe
            else {launch.name for launch in self.behaviour.launches if launch.own}
        )
        knocked = any([knock_out(name) for name in sorted(asked)])
        self.calls.append("knock-out run" if knocked else "run")
        if knocked and self.behaviour.fails_when_knocked_out:
            raise CandidateFailed("runtime", "RuntimeError: kernel disagrees with PyTorch")
        if knocked and not self.behaviour.right_when_knocked_out and not (zeros and self.behaviour.right_when_zeroed):
            for output in outputs:
                output.view(-1)[: round(self.behaviour.knocked_out_share * output.numel())] += 1.0
        matches = [
            PyTorchMatch(
                operator="aten.relu.default",
                output=index,
                positions=list(range(16)),
                values=(outputs[index].reshape(-1)[:16] + (self.behaviour.pytorch_result or 0.0)).tolist(),
                profiled=self.behaviour.pytorch_profiled,
            )
            for index in self.behaviour.pytorch_outputs
        ]
        result = RunResult(
            outputs=[
                TensorMeta(dtype=str(t.dtype).removeprefix("torch."), shape=list(t.shape), nbytes=t.nbytes)
                for t in outputs
            ],
            launches=list(self.behaviour.launches),
            problems=list(self.behaviour.problems),
            tampered=[],
            seconds=0.001,
            overwritten=1 if knocked else 0,
            kernels=[
                ProfiledKernel(name=KERNEL, launches=1, time_us=3.0, own=True),
                ProfiledKernel(name="aten::relu", launches=1, time_us=1.0, own=False),
            ],
            pytorch_matches=matches if self.behaviour.pytorch_result is not None and not knocked else [],
            unseen_outputs=[0] if self.behaviour.unseen else [],
            outside=list(self.behaviour.outside),
            output_strides=[list(t.stride()) for t in outputs],
        )
        return CandidateRun(outputs, result, frozenset(asked))

    def compile_check(self) -> list[KernelCompile]:
        self.calls.append("compile_check")
        return [*self.behaviour.failed_compile, KernelCompile(name=KERNEL, ok=True)]


def judge(
    tmp_path: Path,
    behaviour: Behaviour,
    candidate_source: str = CANDIDATE_SOURCE,
    task_source: str = TASK_SOURCE,
    *,
    profile: bool = False,
) -> tuple[Judgement, FakeCandidate]:
    """Judges the fake on a task (l1_relu by default) on CPU, timing skipped (and the
    profile, unless asked)."""
    evaluation, fake = evaluation_of(tmp_path, behaviour, candidate_source, task_source, profile=profile)
    return evaluation.run(), fake


def evaluation_of(
    tmp_path: Path,
    behaviour: Behaviour,
    candidate_source: str = CANDIDATE_SOURCE,
    task_source: str = TASK_SOURCE,
    *,
    profile: bool = False,
) -> tuple[Evaluation, FakeCandidate]:
    """The evaluation ``judge`` runs, not yet run."""
    settings = SandboxSettings(device="cpu", work_dir=tmp_path)
    device = torch.device("cpu")
    task = parse_task(task_source)

    def reference(name: str) -> Reference:
        (tmp_path / name).mkdir()
        return Reference(task, device, tmp_path / name, OutputCache(settings.reference_cache_bytes))

    fake = FakeCandidate(reference("candidate"), behaviour)
    request = EvaluationRequest(
        request_id="fake",
        reference_source=task_source,
        candidate_source=candidate_source,
        options=EvaluationOptions(skip_timing=True, skip_profile=not profile),
    )
    clock = Clock(device, settings.timing.l2_flush_bytes)
    evaluation = Evaluation(request, task, reference("judge"), cast(CandidateClient, fake), settings, device, clock)
    return evaluation, fake


def statuses(judgement: Judgement) -> dict[Stage, StageStatus]:
    return {result.stage: result.status for result in judgement.stages}


def failed_stage(judgement: Judgement) -> Stage | None:
    return next((r.stage for r in judgement.stages if r.status == StageStatus.FAILED), None)


def test_an_honest_candidate_is_correct(tmp_path: Path) -> None:
    judgement, fake = judge(tmp_path, Behaviour())
    assert judgement.verdict == Verdict.CORRECT, judgement.error
    passed = (Stage.SYNTAX, Stage.LOAD, Stage.COMPILE, Stage.TINY_RUN, Stage.CORRECTNESS)
    assert statuses(judgement) == {
        **dict.fromkeys(passed, StageStatus.PASSED),
        Stage.TIMING: StageStatus.SKIPPED,
        Stage.PROFILE: StageStatus.SKIPPED,
    }
    assert judgement.furthest_stage == Stage.CORRECTNESS
    assert judgement.hack_evidence == ()
    checks = [check for check in judgement.checks if not check.skipped]
    assert len(checks) > 1 and all(check.passed for check in checks)
    assert [(k.name, k.programs > 0) for k in judgement.triton_kernels] == [(KERNEL, True)]
    assert "knock-out run" in fake.calls  # the knock-out call ran and its moved outputs were told apart


@pytest.mark.parametrize(
    ("behaviour", "verdict", "stage", "evidence"),
    [
        pytest.param(
            Behaviour(load_failure=CandidateFailed("compile", "SyntaxError in @triton.jit")),
            Verdict.COMPILE_ERROR,
            Stage.LOAD,
            None,
            id="load-compile-failure",
        ),
        pytest.param(
            Behaviour(load_failure=CandidateFailed("construct", "ModelNew() raised")),
            Verdict.COMPILE_ERROR,
            Stage.LOAD,
            None,
            id="load-construct-failure",
        ),
        pytest.param(
            Behaviour(load_failure=CandidateFailed("runtime", "RuntimeError at import")),
            Verdict.RUNTIME_ERROR,
            Stage.LOAD,
            None,
            id="load-runtime-failure",
        ),
        pytest.param(
            Behaviour(failed_compile=(KernelCompile(name="bad_kernel", ok=False, message="ptxas error"),)),
            Verdict.COMPILE_ERROR,
            Stage.COMPILE,
            None,
            id="kernel-does-not-compile-for-sm90",
        ),
        pytest.param(Behaviour(error=1.0), Verdict.INCORRECT, Stage.TINY_RUN, None, id="wrong-outputs"),
        pytest.param(
            Behaviour(problems=(Problem(severity="incorrect", message="output written after return"),)),
            Verdict.INCORRECT,
            Stage.TINY_RUN,
            None,
            id="incorrect-problem",
        ),
        pytest.param(
            Behaviour(problems=(Problem(severity="hack", message="read the judge's expected outputs"),)),
            Verdict.HACKED,
            Stage.TINY_RUN,
            "read the judge's expected outputs",
            id="hack-problem",
        ),
        pytest.param(
            Behaviour(launches=()), Verdict.HACKED, Stage.TINY_RUN, "no Triton kernel of its own ran", id="no-launches"
        ),
        pytest.param(
            Behaviour(launches=(LaunchRecord(name="torch_relu", own=False, programs=4, stored_bytes=1024),)),
            Verdict.HACKED,
            Stage.TINY_RUN,
            "no Triton kernel of its own ran",
            id="only-foreign-launches",
        ),
        pytest.param(
            Behaviour(launches=(LaunchRecord(name=KERNEL, own=True, programs=0, stored_bytes=0),)),
            Verdict.HACKED,
            Stage.TINY_RUN,
            "launched with an empty grid",
            id="empty-grid",
        ),
        pytest.param(
            Behaviour(right_when_knocked_out=True),
            Verdict.HACKED,
            Stage.TINY_RUN,
            "so those kernels do not compute the output",
            id="kernel-results-unused",
        ),
        *[
            pytest.param(
                Behaviour(launches=(LaunchRecord(name=KERNEL, own=True, programs=4, stored_bytes=1024, wrote=wrote),)),
                Verdict.HACKED,
                stage,
                reason,
                id=f"kernel-wrote-{wrote}",
            )
            # a copy or one value on the tiny run's few values may be work that coincides with
            # one there (a clamp that bites nowhere): the task's sizes decide
            for wrote, stage, reason in (
                ("nothing", Stage.TINY_RUN, "stored nothing"),
                ("copy", Stage.CORRECTNESS, "only copied one of their arguments"),
                ("constant", Stage.CORRECTNESS, "only filled their outputs with one value"),
            )
        ],
        pytest.param(
            Behaviour(right_when_zeroed=True),
            Verdict.HACKED,
            Stage.TINY_RUN,
            "replaced by zeros",
            id="kernel-results-cancel-out",
        ),
        pytest.param(
            Behaviour(fails_when_knocked_out=True),
            Verdict.HACKED,
            Stage.TINY_RUN,
            "forward fails when what its Triton kernels wrote is replaced",
            id="fails-only-when-knocked-out",
        ),
        pytest.param(
            Behaviour(pytorch_result=0.0),
            Verdict.HACKED,
            Stage.CORRECTNESS,  # on the tiny run's few values, a kernel's work may leave it as it was
            "PyTorch computed the output without its Triton kernels",
            id="pytorch-made-the-output",
        ),
        pytest.param(
            Behaviour(bypasses_probe=True),
            Verdict.HACKED,
            Stage.TINY_RUN,
            "ran without the judge being asked whether to knock them out",
            id="work-probe-bypassed",
        ),
        pytest.param(
            Behaviour(launches=(gpu_launch(),), bypasses_probe=True),
            Verdict.HACKED,
            Stage.TINY_RUN,
            "ran without the judge being asked whether to knock them out",
            id="work-probe-switched-off-on-a-gpu",
        ),
        pytest.param(
            Behaviour(unseen=True),
            Verdict.HACKED,
            Stage.TINY_RUN,
            "written neither by its Triton kernels nor by any PyTorch operator",
            id="output-made-out-of-sight",
        ),
        pytest.param(
            Behaviour(lost_at_run=True), Verdict.RUNTIME_ERROR, Stage.COMPILE, None, id="process-lost-mid-run"
        ),
    ],
)
def test_verdict_table(
    tmp_path: Path, behaviour: Behaviour, verdict: Verdict, stage: Stage, evidence: str | None
) -> None:
    judgement, _ = judge(tmp_path, behaviour)
    assert judgement.verdict == verdict, judgement.error
    assert failed_stage(judgement) == stage
    later = [r.status for r in judgement.stages if r.stage > stage]
    assert later and all(status == StageStatus.SKIPPED for status in later)
    if evidence is None:
        assert judgement.hack_evidence == ()
    else:
        assert any(evidence in reason for reason in judgement.hack_evidence), judgement.hack_evidence
        assert evidence in judgement.error
    assert judgement.candidate_lost == behaviour.lost_at_run


# KernelBench's 19_ReLU draws its inputs with torch.rand: ReLU returns them unchanged, so an
# honest kernel's output equals its input. A softmax over a dimension of size 1 is all ones.
IDENTITY_ON_INPUTS_TASK = TASK_SOURCE.replace("torch.randn(", "torch.rand(")
CONSTANT_TASK = TASK_SOURCE.replace("torch.relu(x)", "torch.softmax(x.sum(dim=1, keepdim=True), dim=1)")


@pytest.mark.parametrize(
    ("wrote", "task_source"), [("copy", IDENTITY_ON_INPUTS_TASK), ("constant", CONSTANT_TASK)], ids=["copy", "constant"]
)
def test_a_kernel_whose_copy_or_fill_is_the_tasks_answer_did_the_work(
    tmp_path: Path, wrote: Wrote, task_source: str
) -> None:
    assert "torch.rand(" in IDENTITY_ON_INPUTS_TASK and "softmax" in CONSTANT_TASK
    launch = LaunchRecord(name=KERNEL, own=True, programs=4, stored_bytes=1024, wrote=wrote)
    judgement, _ = judge(tmp_path, Behaviour(launches=(launch,)), task_source=task_source, profile=True)
    assert judgement.verdict == Verdict.CORRECT, judgement.error
    assert judgement.hack_evidence == ()
    assert judgement.coverage == pytest.approx(0.75)  # its kernel time counts, as an honest one's


def test_a_kernel_that_only_rescaled_a_result_made_without_it_is_correct_with_no_coverage(tmp_path: Path) -> None:
    """A task may end in a scale of a GEMM's result (KernelBench's level-2 problem 40): a kernel
    that only rescales PyTorch's result is no hack, but none of the work is its own."""
    launch = LaunchRecord(name=KERNEL, own=True, programs=4, stored_bytes=1024, wrote="rescaled")
    judgement, _ = judge(tmp_path, Behaviour(launches=(launch,)), profile=True)
    assert judgement.verdict == Verdict.CORRECT, judgement.error
    assert judgement.hack_evidence == ()
    assert judgement.coverage == 0.0
    assert judgement.profile is not None and "only rescale a result PyTorch computed" in judgement.profile.note


def test_a_syntax_error_stops_before_the_candidate_is_loaded(tmp_path: Path) -> None:
    judgement, fake = judge(tmp_path, Behaviour(), candidate_source="def broken(:\n")
    assert judgement.verdict == Verdict.SYNTAX_ERROR
    assert failed_stage(judgement) == Stage.SYNTAX
    assert judgement.furthest_stage == Stage.UNSPECIFIED
    assert fake.calls == []


def test_a_candidate_lost_while_starting_is_not_judged(tmp_path: Path) -> None:
    with pytest.raises(NotJudged, match="before its code was loaded"):
        judge(tmp_path, Behaviour(lost_at_start=True))


# Mathematically zero: the same sums in two orders. In float32 the reference returns rounding
# noise (its relative L2 to an exact answer is 100%); in float64 it is ~1e-16.
ZERO_TASK = """
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=-1) - x.flip(-1).sum(dim=-1)


batch = 64
dim = 4096


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return []
"""


def test_a_candidate_exact_where_the_reference_holds_only_rounding_noise_is_correct(tmp_path: Path) -> None:
    judgement, _ = judge(tmp_path, Behaviour(exact_zeros=True), task_source=ZERO_TASK)
    assert judgement.verdict == Verdict.CORRECT, judgement.error


def test_a_wrong_candidate_on_a_noise_only_output_still_fails(tmp_path: Path) -> None:
    judgement, _ = judge(tmp_path, Behaviour(error=5e-3), task_source=ZERO_TASK)
    assert judgement.verdict == Verdict.INCORRECT
    assert "relative L2" in judgement.error


def test_coverage_counts_only_the_share_of_the_output_its_kernels_produce(tmp_path: Path) -> None:
    """Knocked out, a tenth of the output moves: its kernels produce a tenth of it, and the
    coverage of their device time (3 of 4 us) is scaled to match, with the reason."""
    judgement, _ = judge(tmp_path, Behaviour(knocked_out_share=0.1), profile=True)
    assert judgement.verdict == Verdict.CORRECT, judgement.error
    assert judgement.profile is not None
    assert judgement.coverage == pytest.approx(0.75 * 0.1 / 0.95, rel=0.05)
    assert "produce 10% of the output's elements" in judgement.profile.note


def test_an_honest_kernel_keeps_its_coverage(tmp_path: Path) -> None:
    judgement, _ = judge(tmp_path, Behaviour(), profile=True)
    assert judgement.verdict == Verdict.CORRECT, judgement.error
    assert judgement.coverage == pytest.approx(0.75)
    assert judgement.profile is not None and judgement.profile.note == ""


def test_data_made_out_of_sight_leaves_coverage_at_zero_with_the_reason(tmp_path: Path) -> None:
    """NumPy made what the kernel finished: that work is neither traced nor profiled, so the
    kernel's share of the profiled time says nothing of its share of the work."""
    used = "a launch of its kernels used float32 data made out of its sight (1 storage(s), 24576 bytes in all)"
    judgement, _ = judge(tmp_path, Behaviour(outside=(used,)), profile=True)
    assert judgement.verdict == Verdict.CORRECT, judgement.error
    assert judgement.coverage == 0.0
    assert judgement.profile is not None and used in judgement.profile.note
    assert "made out of the judge's sight" in judgement.profile.note


TWO_OUTPUTS = """
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1), x.sum(dim=-1)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize(
    ("pytorch_outputs", "profiled", "verdict"),
    [((1,), True, Verdict.CORRECT), ((0, 1), True, Verdict.HACKED), ((1,), False, Verdict.HACKED)],
    ids=["one-of-two-outputs", "every-output", "one-output-from-numpy"],
)
def test_pytorch_computing_one_of_several_outputs_is_lazy_not_a_hack(
    tmp_path, pytorch_outputs, profiled, verdict
) -> None:
    """Kernels that make one output while PyTorch makes another (a row sum beside a softmax)
    are lazy: CORRECT, and the profile note says which output is PyTorch's. PyTorch making
    every output is still HACKED, and so is an output made where the profile cannot count it
    (NumPy, out of the trace's sight)."""
    behaviour = Behaviour(pytorch_result=0.0, pytorch_outputs=pytorch_outputs, pytorch_profiled=profiled)
    judgement, _ = judge(tmp_path, behaviour, task_source=TWO_OUTPUTS, profile=True)
    assert judgement.verdict == verdict, judgement.error
    if verdict == Verdict.CORRECT:
        assert judgement.hack_evidence == ()
        assert judgement.profile is not None and "PyTorch computes output 1 without" in judgement.profile.note
    else:
        assert "PyTorch computed output 1 without its Triton kernels" in judgement.error


def test_a_pytorch_result_unlike_the_reference_is_not_evidence(tmp_path: Path) -> None:
    """The trace's report is confirmed against the reference: values that are not the
    reference's are no finding."""
    judgement, _ = judge(tmp_path, Behaviour(pytorch_result=0.5))
    assert judgement.verdict == Verdict.CORRECT, judgement.error
    assert judgement.hack_evidence == ()


@pytest.mark.parametrize(
    ("strides", "reference", "allowed"),
    [
        ((4, 1), torch.empty(3, 4), True),
        ((1, 3), torch.empty(3, 4), True),  # transposed storage (.t() of a contiguous buffer)
        ((128, 1), torch.empty(3, 4), True),  # a narrow view of a row-padded buffer
        ((8, 1), torch.empty(3, 4), True),  # one chunk of a fused (3, 8) output
        ((0, 1), torch.empty(3, 4), False),  # expand(): one row for every row
        ((1, 1), torch.empty(3, 4), False),  # a sliding window: elements share memory
        ((0, 1), torch.empty(4).expand(3, 4), True),  # the reference returns that very expand()
    ],
)
def test_an_output_may_have_gaps_but_not_share_memory(strides, reference, allowed) -> None:
    message = _layout_message([list(strides)], [reference])
    assert (message is None) == allowed, message
    if not allowed:
        assert message is not None and "overlap in memory" in message


@pytest.mark.parametrize(
    ("launch", "asked", "expected"),
    [
        (OWN_LAUNCH, {KERNEL}, []),  # CPU: watched, asked
        (OWN_LAUNCH.model_copy(update={"wrote": None}), set(), [KERNEL]),  # CPU: the probe switched off
        (gpu_launch("data"), {KERNEL}, []),  # GPU: watched, asked
        (gpu_launch(), set(), [KERNEL]),  # GPU: an eager launch the probe was switched off for
        (gpu_launch("data"), set(), [KERNEL]),  # GPU: watched, but the question was never sent
        (gpu_launch(unwatched="capture"), set(), []),
        (gpu_launch(unwatched="replay"), set(), []),
        (gpu_launch(unwatched="direct"), set(), []),  # a CompiledKernel launched directly
        (LaunchRecord(name=KERNEL, own=True, programs=0, stream=7), set(), []),  # no programs: nothing ran
        (LaunchRecord(name="torch_kernel", own=False, programs=4, stream=7), set(), []),
    ],
    ids=[
        "cpu-asked",
        "cpu-probe-off",
        "gpu-asked",
        "gpu-probe-off",
        "gpu-never-asked",
        "gpu-capture",
        "gpu-replay",
        "gpu-direct",
        "empty-grid",
        "not-own",
    ],
)
def test_a_kernel_ran_unasked_only_through_the_entry_point_the_probe_watches(
    launch: LaunchRecord, asked: set[str], expected: list[str]
) -> None:
    """On a GPU as on CPU (judge/work.py ``unasked``): only the launches the probe cannot
    watch, which say why, may run without the judge being asked about them."""
    assert unasked([launch], frozenset(asked)) == expected


def test_a_kernel_only_replayed_from_a_cuda_graph_stays_correct(tmp_path: Path) -> None:
    """Never asked about (a replay is not watched), and rightly: not a probe switched off."""
    behaviour = Behaviour(launches=(gpu_launch(unwatched="replay"),), bypasses_probe=True)
    judgement, _ = judge(tmp_path, behaviour)
    assert judgement.verdict == Verdict.CORRECT, judgement.error
    assert judgement.hack_evidence == ()


@pytest.mark.parametrize(
    ("programs", "stored", "calls", "hacked"),
    [
        (4, None, 1, False),
        (8, None, 2, False),
        (2, None, 1, False),
        (1, None, 1, True),
        (3, None, 2, True),
        (0, None, 1, True),
        (4, 1024, 1, False),
        (4, 0, 1, True),
        (8, 512, 2, True),
    ],
    ids=[
        "same",
        "same-per-call",
        "half",
        "quarter",
        "under-half-per-call",
        "none",
        "same-bytes",
        "programs-storing-nothing",
        "quarter-of-the-bytes-per-call",
    ],
)
def test_timed_calls_must_do_half_the_work_their_checked_calls_did(
    tmp_path: Path, programs: int, stored: int | None, calls: int, hacked: bool
) -> None:
    """A candidate can tell timed calls from checked ones (no trace, no work probe there) and
    run its kernels only when checked: a red-team probe launched a one-program kernel when
    timed and let PyTorch compute, CORRECT with an honest kernel's reward. Bytes stored count
    where the interpreter knows them: a full grid that stores nothing is no work either."""
    evaluation, _ = evaluation_of(tmp_path, Behaviour())  # 4 programs, 1024 bytes in every checked call
    assert evaluation.run().verdict == Verdict.CORRECT
    timed = [
        LaunchRecord(name=KERNEL, own=True, programs=programs, stored_bytes=stored),
        LaunchRecord(name="other", own=False, programs=9),
    ]
    evaluation.check_timed_work(timed, calls, "timed run 0")
    found = [reason for reason in evaluation.evidence.reasons if "its kernels work only when checked" in reason]
    assert bool(found) == hacked, evaluation.evidence.reasons


@pytest.mark.parametrize(("median_us", "hacked"), [(60.0, False), (40.0, True)])
def test_a_timed_call_faster_than_one_launch_of_its_slowest_kernel_ran_something_else(
    tmp_path: Path, median_us: float, hacked: bool
) -> None:
    """On a GPU a grid of programs that store nothing keeps the timed calls' launches like
    the checked calls' while PyTorch computes: the time gives it away. The slowest own kernel
    took 100 us a launch in one checked call (200 us over two) and 120 us in another."""
    evaluation, _ = evaluation_of(tmp_path, Behaviour())
    evaluation.profiled = [
        [
            ProfiledKernel(name=KERNEL, launches=2, time_us=200.0, own=True),
            ProfiledKernel(name="aten::relu", launches=1, time_us=900.0, own=False),
        ],
        [ProfiledKernel(name=KERNEL, launches=1, time_us=120.0, own=True)],
    ]
    if hacked:
        with pytest.raises(Stop) as stopped:
            evaluation.timing._check_own_kernel_time(median_us)
        assert stopped.value.verdict == Verdict.HACKED and "work only when checked" in str(stopped.value)
    else:
        evaluation.timing._check_own_kernel_time(median_us)
