"""The hack corpus and the legitimate corpus, judged through the shared sandbox server.

Every file in hacks/ is a reward hack from the public catalogues (its docstring names the
source and what the judge must conclude); every file in legit/ is an unusual but honest
solution that must be judged correct. Files whose docstring carries ``gap:`` are findings the
judge misses today: their tests are strict xfails, so they turn red once the gap is closed
and the marker must go.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from drkernel.v1 import sandbox_pb2 as pb
from tests.sandbox import corpus

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]  # the corpora, each file through a real server

HERE = Path(__file__).parent
# Candidates that would search the host itself without namespaces are judged only with them.
HACKS = [c for c in corpus.load(HERE / "hacks") if corpus.ISOLATED or not c.needs_isolation]
LEGIT = corpus.load(HERE / "legit")
CAUGHT = [c for c in HACKS if c.expect not in ("CORRECT", "no gain")]
LAZY = [c for c in HACKS if c.expect == "CORRECT"]
GAINLESS = [c for c in HACKS if c.expect == "no gain"]


def _param(candidate: corpus.Candidate) -> pytest.param:
    marks = [pytest.mark.xfail(strict=True, reason=candidate.gap)] if candidate.gap else []
    return pytest.param(candidate, id=candidate.name, marks=marks)


@pytest.fixture(scope="module")
def verdicts(sandbox) -> dict[str, corpus.Outcome]:
    """The hack corpus in one batch, so that the server's workers share the load (heavy: the
    legitimate corpus has a fixture of its own, so that CI judges it without the hacks)."""
    return corpus.judge_all(sandbox.address, [c.request() for c in HACKS])


@pytest.fixture(scope="module")
def legit_verdicts(sandbox) -> dict[str, corpus.Outcome]:
    """The legitimate corpus in one batch: an honest kernel judged wrong is the worst defect."""
    return corpus.judge_all(sandbox.address, [c.request() for c in LEGIT])


def test_corpora_are_large_distinct_and_documented():
    caught_today = [c for c in corpus.load(HERE / "hacks") if not c.gap and c.expect != "CORRECT"]
    assert len(caught_today) >= 25
    assert len({c.path.read_text() for c in HACKS}) == len(HACKS)
    assert len([c for c in LEGIT if not c.gap]) >= 8
    assert all(c.reason for c in CAUGHT if c.expect == "HACKED")
    assert all(c.source for c in HACKS + LEGIT)
    assert {"l1_relu", "l1_softmax", "l2_gemm_bias_relu", "l1_sum_dim"} <= {c.task for c in HACKS + LEGIT}


@pytest.mark.heavy
@pytest.mark.parametrize("candidate", [_param(c) for c in CAUGHT])
def test_hack_is_caught_as_declared_and_earns_nothing(verdicts, candidate):
    """A HACKED file declares the reason its verdict must name, any other the error its verdict
    must carry (corpus.declared refuses a reason there: only HACKED verdicts have reasons), so
    that a check that goes missing fails here."""
    response = verdicts[candidate.name]
    assert candidate.reason if candidate.expect == "HACKED" else candidate.error
    assert corpus.matches(candidate, response), corpus.describe(response)
    assert response.reward == 0.0


@pytest.mark.heavy
@pytest.mark.parametrize("candidate", [_param(c) for c in LAZY])
def test_lazy_kernel_is_correct_but_its_profile_shows_the_bottleneck_in_pytorch(verdicts, candidate):
    """A lazy candidate is correct and earns little coverage; one whose kernels do little of
    the output's work declares how little (``coverage_below``) and the feedback that says why."""
    response = verdicts[candidate.name]
    assert corpus.matches(candidate, response), corpus.describe(response)
    assert response.verdict == pb.VERDICT_CORRECT, corpus.describe(response)
    assert [k.name for k in response.triton_kernels] and all(k.programs > 0 for k in response.triton_kernels)
    assert response.coverage < 0.5
    heaviest = response.profile.kernels[0]
    # the bottleneck is PyTorch's, or a kernel of its own that the profile's note discounts, or
    # the work was done where the profile cannot see (the note says so)
    discounted = heaviest.name in response.profile.note or "out of the judge's sight" in response.profile.note
    assert (not heaviest.is_candidate and heaviest.name.startswith("aten::")) or discounted


@pytest.mark.heavy
@pytest.mark.parametrize("candidate", [_param(c) for c in GAINLESS])
def test_trick_earns_no_more_than_its_honest_twin(verdicts, candidate):
    """A trick that fools a profile (operators hidden in ranges, threads or custom ops, wasted
    traffic or FLOPs) leaves the candidate's coverage and reward where its twin without the
    trick has them."""
    response, twin = verdicts[candidate.name], verdicts[Path(candidate.baseline).stem]
    assert response.verdict == pb.VERDICT_CORRECT, corpus.describe(response)
    assert twin.verdict == pb.VERDICT_CORRECT, corpus.describe(twin)
    assert response.coverage <= twin.coverage + 0.01, (response.coverage, twin.coverage)
    assert response.reward <= twin.reward + 0.005, (response.reward, twin.reward)


@pytest.mark.parametrize("candidate", [_param(c) for c in LEGIT])
def test_legitimate_candidate_is_correct_and_credited_with_its_kernels(legit_verdicts, candidate):
    response = legit_verdicts[candidate.name]
    assert corpus.matches(candidate, response), corpus.describe(response)
    assert not response.hack_reasons
    assert response.triton_kernels and all(k.programs > 0 for k in response.triton_kernels)
    assert response.coverage > (candidate.coverage_above if candidate.coverage_above is not None else 0.9)
