"""Two CPU ranks (torchrun, gloo, FSDP2) against one process: the same log-probs, the same
updated weights, a DCP checkpoint that round-trips and reshards to one process, and LoRA."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from services.trainer import distributed
from services.trainer.learner import Learner

from .learner_helpers import build_tiny_model, make_config, make_rows, max_difference

CPU = torch.device("cpu")
ROOT = Path(__file__).resolve().parents[2]


def test_single_process_helpers_are_no_ops(monkeypatch: pytest.MonkeyPatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert distributed.init_distributed()[:2] == (0, 1)
    assert distributed.rank_and_world() == (0, 1)
    assert distributed.broadcast_object({"a": 1}) == {"a": 1}
    assert distributed.all_gather_object(3) == [3]
    assert distributed.all_reduce_sum(torch.ones(2)).tolist() == [1.0, 1.0]
    distributed.barrier()
    distributed.shutdown()


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Runs tests/trainer/learner_helpers.py on 2 ranks once; its outputs and inputs."""
    base = tmp_path_factory.mktemp("two-ranks")
    model_dir = build_tiny_model(base / "model")
    lora_model_dir = build_tiny_model(base / "lora-model", seed=1, tied=True)
    # CPU ranks (gloo) even where GPUs are visible: two ranks cannot share one GPU under NCCL.
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "tests.trainer.learner_helpers",
        str(model_dir),
        str(lora_model_dir),
    ]
    for attempt in range(2):
        out = base / f"out-{attempt}"
        out.mkdir()
        done = subprocess.run([*command, str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
        # Gloo once aborted a rank on a loaded 2-core CI machine ("terminate called without an
        # active exception", no Python error in either rank; not reproduced in 6 runs under load):
        # a rank aborted from C++ (SIGABRT) gets one more launch, any other failure none.
        if done.returncode == 0 or "SIGABRT" not in done.stderr:
            break
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {
        "model_dir": model_dir,
        "lora_model_dir": lora_model_dir,
        "out": out,
        "results": json.loads((out / "results.json").read_text()),
        "weights": torch.load(out / "weights.pt", weights_only=True),
    }


@pytest.mark.slow
def test_two_ranks_match_one_process(two_ranks: dict[str, Any]):
    results, weights = two_ranks["results"], two_ranks["weights"]
    assert results["world"] == 2
    rows = make_rows(5, masked=(1, 3))
    config = make_config(optim={"lr": 1e-4, "micro_batch_rows": 2}, rollout={"temperature": 0.7})
    learner = Learner(config, two_ranks["model_dir"], CPU)
    logprobs = learner.logprobs(rows)
    for ours, theirs in zip(logprobs, results["logprobs"], strict=True):
        assert torch.allclose(torch.tensor(ours), torch.tensor(theirs), atol=1e-5)
    stats = learner.update(rows, logprobs)
    assert stats.loss == pytest.approx(results["stats"]["loss"], rel=1e-5)
    assert stats.grad_norm == pytest.approx(results["stats"]["grad_norm"], rel=1e-4)
    assert (stats.rows, stats.tokens) == (results["stats"]["rows"], results["stats"]["tokens"])
    first = learner.full_state_dict()
    assert first is not None
    assert max_difference(first, weights["first"]) < 1e-6


def test_two_rank_checkpoint_round_trips_and_reshards_to_one_process(two_ranks: dict[str, Any]):
    weights = two_ranks["weights"]
    assert two_ranks["results"]["extra"] == {"step": 1}
    assert max_difference(weights["reloaded"], weights["first"]) == 0.0
    assert max_difference(weights["resumed_second"], weights["second"]) < 1e-7

    config = make_config(optim={"lr": 1e-4, "micro_batch_rows": 1}, rollout={"temperature": 0.7})
    learner = Learner(config, two_ranks["model_dir"], CPU)
    learner.load_checkpoint(two_ranks["out"] / "checkpoints" / "step_1")
    reloaded = learner.full_state_dict()
    assert reloaded is not None
    assert max_difference(reloaded, weights["first"]) == 0.0
    rows = make_rows(5, masked=(1, 3))
    learner.update(rows, two_ranks["results"]["logprobs"])
    assert max_difference(learner.full_state_dict(), weights["second"]) < 1e-6  # type: ignore[arg-type]


@pytest.mark.slow
def test_two_rank_lora_merges_like_one_process(two_ranks: dict[str, Any]):
    config = make_config(optim={"lr": 1e-3, "micro_batch_rows": 2}, lora={"enabled": True, "rank": 4})
    learner = Learner(config, two_ranks["lora_model_dir"], CPU)
    rows = make_rows(5, masked=(1, 3))
    learner.update(rows, learner.logprobs(rows))
    merged = learner.full_state_dict()
    assert merged is not None
    assert merged.keys() == two_ranks["weights"]["merged"].keys()
    assert "lm_head.weight" not in merged  # tied to the embeddings
    assert max_difference(merged, two_ranks["weights"]["merged"]) < 1e-6
