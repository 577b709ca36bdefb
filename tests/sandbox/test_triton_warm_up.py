"""The warm pool's own Triton launch: compiled into its own cache directory, leaving the
candidate's (saved per source after an evaluation) to what the candidate compiles. GPU only:
under the interpreter nothing is compiled."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from services.sandbox.candidate.triton_warm_up import warm_up_triton

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@triton.jit
def _store_two(out_ptr):
    tl.store(out_ptr, 2.0)


def _compiled(directory: Path) -> set[str]:
    return {path.name for path in directory.rglob("*.cubin")}


def test_warm_up_compiles_into_its_own_directory_and_gives_the_candidate_its_own_back(tmp_path, monkeypatch):
    candidate_cache, warm_cache = tmp_path / "candidate", tmp_path / "warm"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(candidate_cache))
    device = torch.device("cuda", 0)
    warm_up_triton(device, warm_cache)
    out = torch.zeros(1, device=device)
    _store_two[(1,)](out)
    torch.cuda.synchronize(device)
    assert out.item() == 2.0
    assert _compiled(warm_cache) == {"_store_one.cubin"}
    assert _compiled(candidate_cache) == {"_store_two.cubin"}
