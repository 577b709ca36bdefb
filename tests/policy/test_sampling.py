"""Per-row token selection: scores shaped as Hugging Face's warpers shape them, draws by inverse
CDF, and per-sample generators."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import TemperatureLogitsWarper, TopPLogitsWarper

from services.policy.sampling import draw, sample_rng, shape_scores


def test_each_row_is_shaped_as_the_library_warpers_shape_it_alone() -> None:
    torch.manual_seed(0)
    logits = torch.randn(4, 300) * 3
    temperature, top_p = [0.0, 1.0, 0.7, 1.3], [1.0, 1.0, 0.9, 0.5]
    shaped = shape_scores(logits, temperature, top_p)
    assert torch.equal(shaped[0], logits[0])  # greedy: raw logits
    assert torch.equal(shaped[1], logits[1])  # T = 1, no nucleus
    for row in (2, 3):
        alone = TemperatureLogitsWarper(temperature[row])(None, logits[row : row + 1].clone())
        alone = TopPLogitsWarper(top_p[row])(None, alone)
        assert torch.equal(shaped[row], alone[0])  # bit for bit, nucleus included
    kept = (~shaped[3].isinf()).sum().item()
    assert 1 <= kept < 300
    probs = torch.softmax(logits[3] / 1.3, dim=-1).sort(descending=True).values
    assert probs[: kept - 1].sum() < 0.5 <= probs[:kept].sum()  # the smallest set reaching top_p


def test_a_row_is_shaped_the_same_whatever_shares_its_batch() -> None:
    torch.manual_seed(1)
    logits = torch.randn(3, 200)
    together = shape_scores(logits, [0.7, 0.0, 1.2], [0.8, 1.0, 0.95])
    alone = shape_scores(logits[2:], [1.2], [0.95])
    assert torch.equal(together[2], alone[0])


def test_inverse_cdf_draws_on_hand_worked_distributions() -> None:
    scores = torch.log(torch.tensor([[0.1, 0.2, 0.7], [0.1, 0.2, 0.7], [0.1, 0.2, 0.7], [0.5, 0.3, 0.2]]))
    tokens = draw(scores, [0.05, 0.25, 0.95, None]).tolist()
    assert tokens == [0, 1, 2, 0]  # 0.05 < 0.1; 0.1 <= 0.25 < 0.3; 0.95 >= 0.3; greedy: argmax


def test_a_token_outside_the_nucleus_is_never_drawn() -> None:
    scores = torch.tensor([[0.0, 0.0, float("-inf"), float("-inf")]])
    assert draw(scores, [math.nextafter(1.0, 0.0)]).tolist() == [1]
    assert draw(scores, [0.0]).tolist() == [0]


def test_draws_follow_the_distribution() -> None:
    probs = torch.tensor([0.05, 0.15, 0.3, 0.5])
    rng = sample_rng(3, 0)
    uniforms: list[float | None] = [rng.random() for _ in range(20000)]
    tokens = draw(probs.log().expand(len(uniforms), -1), uniforms)
    frequencies = torch.bincount(tokens, minlength=4).double() / len(uniforms)
    assert (frequencies - probs.double()).abs().max().item() < 0.015  # about 4 standard deviations


def test_each_sample_has_its_own_reproducible_generator() -> None:
    first = [sample_rng(7, i).random() for i in range(3)]
    assert first == [sample_rng(7, i).random() for i in range(3)]
    assert len(set(first)) == 3
    assert sample_rng(8, 0).random() != first[0]


@pytest.mark.parametrize("greedy_only", [True, False])
def test_shaping_never_changes_the_logits_passed_in(greedy_only: bool) -> None:
    logits = torch.randn(2, 50)
    before = logits.clone()
    shape_scores(logits, [0.0, 0.0] if greedy_only else [0.0, 0.5], [1.0, 0.7])
    assert torch.equal(logits, before)
