"""GPU-only hacks (streams, timers, L2, CUDA graphs, Inductor kernels, slowing the reference
down) and GPU faults, judged
by a CUDA sandbox server: each is caught, buys nothing, or gets a clear verdict, and the
device stays usable for the next candidate. Run with `make test-gpu` (or
benchmarks/hack_gpu_check.py for a table); skipped without CUDA.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from drkernel.sections import SecuritySettings
from drkernel.v1 import common_pb2
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.server.servicer import start_sandbox
from services.sandbox.tasks import builtin_task
from tests.conftest import sandbox_settings
from tests.sandbox import corpus

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

HACKS_GPU = corpus.load(Path(__file__).parent / "hacks_gpu")
BY_NAME = {c.name: c for c in HACKS_GPU}
# Enough trials for medians, few enough for one GPU to get through the corpus in minutes.
OPTIONS = {"device": common_pb2.DEVICE_CUDA, "timing_trials": 20, "warmup_trials": 3}


def _param(candidate: corpus.Candidate) -> pytest.param:
    marks = [pytest.mark.xfail(strict=True, reason=candidate.gap)] if candidate.gap else []
    return pytest.param(candidate, id=candidate.name, marks=marks)


@pytest.fixture(scope="module")
def cuda_sandbox(background_loop, tmp_path_factory):
    settings = sandbox_settings(
        tmp_path_factory.mktemp("cuda-sandbox"),
        device="cuda",
        cpu_workers=1,
        default_timeout_seconds=900,
        max_timeout_seconds=1800,
    )
    running = background_loop.run(start_sandbox(settings, SecuritySettings()), timeout=900)
    yield running
    background_loop.run(running.stop())


@pytest.fixture(scope="module")
def gpu_verdicts(cuda_sandbox) -> dict[str, corpus.Outcome]:
    return corpus.judge_all(cuda_sandbox.address, [c.request(**OPTIONS) for c in HACKS_GPU], timeout_seconds=3600)


@pytest.mark.parametrize("candidate", [_param(c) for c in HACKS_GPU if c.expect not in ("no gain", "CORRECT")])
def test_gpu_hack_or_fault_gets_the_expected_verdict(gpu_verdicts, candidate):
    response = gpu_verdicts[candidate.name]
    assert corpus.matches(candidate, response), corpus.describe(response)
    assert response.device_name and response.reward == 0.0


@pytest.mark.parametrize("candidate", [_param(c) for c in HACKS_GPU if c.expect == "no gain"])
def test_trick_buys_nothing_over_its_honest_twin(gpu_verdicts, candidate):
    hacked, honest = gpu_verdicts[candidate.name], gpu_verdicts[BY_NAME[Path(candidate.baseline).stem].name]
    assert hacked.verdict == honest.verdict == pb.VERDICT_CORRECT, (corpus.describe(hacked), corpus.describe(honest))
    assert hacked.timing.valid and honest.timing.valid
    assert hacked.speedup <= honest.speedup * 1.10, (hacked.speedup, honest.speedup)


def test_after_the_gpu_corpus_a_good_kernel_is_still_correct(cuda_sandbox, gpu_verdicts):
    task = builtin_task("l1_relu")
    request = pb.EvaluateRequest(
        request_id="good-after-gpu-faults",
        reference_source=task.source(),
        candidate_source=task.solution.read_text(),
        options=pb.EvaluateOptions(**OPTIONS),
    )
    response = corpus.judge_all(cuda_sandbox.address, [request])[request.request_id]
    assert response.verdict == pb.VERDICT_CORRECT, corpus.describe(response)
    assert response.timing.valid and response.speedup > 0
