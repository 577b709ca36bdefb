"""The PPO loss on hand-worked numbers: asymmetric clip, dual clip, k3 KL, aggregation."""

from __future__ import annotations

import math

import pytest
import torch

from services.trainer.loss import ppo_loss
from services.trainer.run_config import LossSettings

UNIT = LossSettings(scale=1.0)  # clip 0.2 / 0.28, dual clip 3


def _tensors(ratios: list[list[float]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(logprobs requiring grad, old logprobs) whose exp-differences are ``ratios``."""
    old = torch.full((len(ratios), len(ratios[0])), -2.0)
    logprobs = (old + torch.tensor(ratios).log()).requires_grad_()
    return logprobs, old


def test_token_losses_clip_and_dual_clip_by_hand():
    # row 0, A = +1: r = 1.5 -> max(-1.5, -1.28) = -1.28 (clipped above 1 + 0.28)
    #                r = 0.5 -> max(-0.5, -0.8) = -0.5 (no lower clip for A > 0)
    # row 1, A = -1: r = 0.5 -> max(0.5, 0.8) = 0.8 (clipped below 1 - 0.2), under the bound 3
    #                r = 5.0 -> max(5, 1.28) = 5, then dual clip min(5, 3) = 3
    # row 2, A = -2: r = 1.1 -> 2.2 (inside the clip range); row 3 is masked
    logprobs, old = _tensors([[1.5, 0.5], [0.5, 5.0], [1.1, 1.0], [2.0, 2.0]])
    advantages = torch.tensor([1.0, -1.0, -2.0, 5.0])
    mask = torch.tensor([[1, 1], [1, 1], [1, 0], [0, 0]])
    terms = ppo_loss(logprobs, old, advantages, mask, UNIT, global_rows=4)
    rows = [-1.28 - 0.5, 0.8 + 3.0, 2.2, 0.0]
    assert terms.loss.item() == pytest.approx(sum(rows) / 4, abs=1e-6)
    assert terms.tokens.item() == 5
    assert terms.clipped_tokens.item() == 2  # r = 1.5 (A > 0) and r = 0.5 (A < 0)
    assert terms.dual_clipped_tokens.item() == 1  # r = 5 (A < 0)
    assert terms.kl_sum.item() == 0.0

    terms.loss.backward()
    # d(-A r)/d logp = -A r on unclipped tokens, 0 where a clip is active; / global rows
    expected = torch.tensor([[0.0, -0.5], [0.0, 0.0], [2.2, 0.0], [0.0, 0.0]]) / 4
    assert torch.allclose(logprobs.grad, expected, atol=1e-6)


def test_scale_and_global_row_count_divide_the_summed_loss():
    logprobs, old = _tensors([[1.0, 1.0, 1.0]])
    mask = torch.ones(1, 3)
    # on-policy (r = 1): loss = scale * (-A * tokens) / global rows
    terms = ppo_loss(logprobs, old, torch.tensor([0.5]), mask, LossSettings(), global_rows=8)
    assert terms.loss.item() == pytest.approx(1e-3 * -0.5 * 3 / 8)


def test_masked_rows_count_in_the_denominator_and_get_no_gradient():
    logprobs, old = _tensors([[1.0], [1.0]])
    mask = torch.tensor([[1.0], [0.0]])
    terms = ppo_loss(logprobs, old, torch.tensor([1.0, 1.0]), mask, UNIT, global_rows=2)
    assert terms.loss.item() == pytest.approx(-0.5)
    terms.loss.backward()
    assert logprobs.grad[1, 0].item() == 0.0


def test_micro_batches_sum_to_the_whole_batch():
    torch.manual_seed(0)
    logprobs, old = torch.randn(6, 5) - 2, torch.randn(6, 5) - 2
    advantages, mask = torch.randn(6), (torch.rand(6, 5) > 0.3).float()
    whole = ppo_loss(logprobs, old, advantages, mask, LossSettings(), global_rows=6).loss
    parts = sum(
        ppo_loss(
            logprobs[i : i + 2], old[i : i + 2], advantages[i : i + 2], mask[i : i + 2], LossSettings(), global_rows=6
        ).loss
        for i in range(0, 6, 2)
    )
    assert parts.item() == pytest.approx(whole.item(), rel=1e-6)


def test_k3_kl_to_the_reference_by_hand():
    logprobs, old = _tensors([[1.0, 1.0]])
    ref = logprobs.detach() + torch.tensor([[math.log(2.0), 0.0]])
    settings = LossSettings(scale=1.0, kl_coef=0.5)
    terms = ppo_loss(logprobs, old, torch.tensor([0.0]), torch.ones(1, 2), settings, 1, ref)
    kl = 2.0 - math.log(2.0) - 1.0  # exp(d) - d - 1 with d = log 2; zero for d = 0
    assert terms.kl_sum.item() == pytest.approx(kl)
    assert terms.loss.item() == pytest.approx(0.5 * kl)


def test_a_far_off_ratio_stays_finite():
    logprobs, old = _tensors([[1.0]])
    far = (logprobs + 100.0).detach().requires_grad_()
    terms = ppo_loss(far, old, torch.tensor([-1.0]), torch.ones(1, 1), UNIT, 1)
    terms.loss.backward()
    assert terms.loss.item() == pytest.approx(3.0)  # the dual clip's bound
    assert torch.isfinite(far.grad).all()


def test_global_rows_must_be_positive():
    logprobs, old = _tensors([[1.0]])
    with pytest.raises(ValueError):
        ppo_loss(logprobs, old, torch.tensor([1.0]), torch.ones(1, 1), UNIT, 0)
