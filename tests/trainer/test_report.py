"""The run report: curves as valid PNGs and a first/last/best table, from a metrics.jsonl as
the training loop writes it (including a last line still being written and a resumed run
that wrote some steps twice)."""

from __future__ import annotations

import json
import math
import random
import struct
from pathlib import Path

import pytest

from drkernel.errors import InvalidArgument
from services.trainer.report import read_metrics, summary_table, write_report

STEPS = 40


def fake_step(step: int, rng: random.Random) -> dict[str, float]:
    """One line of a plausible run: reward and correctness rise, mismatch stays tiny."""
    progress = step / STEPS
    generating, evaluating = 20 + rng.uniform(0, 5), 30 + rng.uniform(0, 10)
    logprobs, updating, syncing = 3 + rng.uniform(0, 1), 6 + rng.uniform(0, 2), 1 + rng.uniform(0, 0.5)
    return {
        "step": step,
        "reward_mean": round(0.1 + 0.6 * progress + rng.uniform(-0.05, 0.05), 4),
        "correct_rate": round(min(1.0, 0.05 + 0.7 * progress + rng.uniform(0, 0.05)), 4),
        "hacked_rate": round(rng.uniform(0, 0.1) * (1 - progress), 4),
        "mrs_rejected_rate": round(rng.uniform(0, 0.2), 4),
        "prs_rejected_rate": round(rng.uniform(0, 0.3), 4),
        "veto_rate": round(rng.uniform(0, 0.05), 4),
        "logprob_mismatch": round(rng.uniform(1e-4, 5e-4), 6),
        "weights_version": step,
        "seconds_generating": generating,
        "seconds_evaluating": evaluating,
        "seconds_logprobs": logprobs,
        "seconds_updating": updating,
        "seconds_syncing": syncing,
        "seconds_step": generating + evaluating + logprobs + updating + syncing + 0.5,
        "level2_share": 0.1,  # an extra key the loop may add
    }


def write_run(directory: Path, rows: list[dict[str, float]], tail: str = "") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + tail)
    return directory


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk; fails on anything that is not a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    length, kind = struct.unpack(">I4s", data[8:16])
    assert (length, kind) == (13, b"IHDR")
    assert data.endswith(b"IEND\xaeB`\x82")
    return struct.unpack(">II", data[16:24])


@pytest.mark.slow
def test_report_of_a_run_being_written(tmp_path: Path) -> None:
    rng = random.Random(0)
    rows = [fake_step(step, rng) for step in range(1, STEPS + 1)]
    partial = json.dumps(fake_step(STEPS + 1, rng))[:57]  # the loop is mid-write
    run = write_run(tmp_path / "run", rows, tail=partial)

    written = write_report(run)

    names = sorted(p.name for p in written)
    assert names == sorted(
        ["reward.png", "correctness.png", "rejection.png", "logprob_mismatch.png", "step_time.png", "summary.txt"]
    )
    for path in written:
        assert path.parent == run / "report"
        if path.suffix == ".png":
            assert png_size(path) == (800, 450)
            from matplotlib.image import imread

            assert imread(path).shape[:2] == (450, 800)  # decodes
    assert (run / "report" / "summary.txt").read_text().strip() == summary_table(rows).strip()

    table = {line.split()[0]: line.split() for line in summary_table(rows).splitlines()[2:-1]}
    rewards = [r["reward_mean"] for r in rows]
    first, last, best, at = table["reward_mean"][1:5]
    assert float(first) == pytest.approx(rewards[0], abs=1e-4)
    assert float(last) == pytest.approx(rewards[-1], abs=1e-4)
    assert float(best) == pytest.approx(max(rewards), abs=1e-4)
    assert int(at) == rows[rewards.index(max(rewards))]["step"]
    hacked = [r["hacked_rate"] for r in rows]
    assert float(table["hacked_rate"][3]) == pytest.approx(min(hacked), abs=1e-4)  # lower is better
    assert table["level2_share"][3] == "-"  # no known direction: no best
    assert "weights_version" not in table and "step" not in table
    assert summary_table(rows).splitlines()[-1] == f"{STEPS} steps, 1 to {STEPS}"


def test_resumed_steps_keep_the_last_record_and_bad_lines_are_named(tmp_path: Path) -> None:
    rng = random.Random(1)
    first_try = [fake_step(step, rng) for step in range(1, 6)]
    resumed = [{**fake_step(step, rng), "reward_mean": 0.9} for step in range(4, 8)]
    run = write_run(tmp_path / "resumed", first_try + resumed)
    rows = read_metrics(run / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6, 7]
    assert [r["reward_mean"] for r in rows[3:]] == [0.9] * 4

    bad = write_run(tmp_path / "bad", first_try[:2], tail="not json\n" + json.dumps(first_try[2]) + "\n")
    with pytest.raises(InvalidArgument, match=":3: not a JSON object"):
        read_metrics(bad / "metrics.jsonl")


def test_a_run_without_some_metrics_draws_only_what_it_has(tmp_path: Path) -> None:
    rows = [{"step": s, "reward_mean": 0.1 * s, "seconds_step": 2.0} for s in range(1, 4)]
    run = write_run(tmp_path / "small", rows)
    assert sorted(p.name for p in write_report(run)) == ["reward.png", "step_time.png", "summary.txt"]


def test_summary_table_values() -> None:
    rows = [
        {"step": 1, "reward_mean": 0.2, "logprob_mismatch": 3e-4},
        {"step": 2, "reward_mean": 0.5, "logprob_mismatch": 1e-4},
        {"step": 3, "reward_mean": 0.4, "logprob_mismatch": math.nan},
    ]
    lines = summary_table(rows).splitlines()
    assert lines[2].split() == ["reward_mean", "0.2000", "0.4000", "0.5000", "2"]
    assert lines[3].split() == ["logprob_mismatch", "3.000e-04", "nan", "1.000e-04", "2"]
    assert summary_table([]) == "no metrics"
