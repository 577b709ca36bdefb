"""The PPO objective of Dr. Kernel, on padded per-token tensors (pure torch).

Per token, with ratio r = exp(logp - old_logp) and the row's advantage A:
    loss = max(-A * r, -A * clip(r, 1 - clip_low, 1 + clip_high))
and for A < 0 the dual clip bounds it further: min(loss, -A * dual_clip), so one token whose
probability grew a lot cannot dominate a negative update. An optional k3 estimate of
KL(pi || ref), exp(ref - logp) - (ref - logp) - 1, is added per token times ``kl_coef``.

Aggregation "seq-mean-token-sum": token losses are summed within each row and the row sums
are averaged over the rows of the *global* batch (all ranks, all micro-batches of one
optimizer step), then multiplied by ``scale``. Masked rows (keep=False) add zero to the sum
but still count in that denominator, as in KernelGym where rejection zeroes the response mask
only; so rejecting rows shrinks the step instead of re-weighting the survivors. Because the
denominator is global and fixed, each micro-batch's loss is its exact share of the whole and
gradients can simply be accumulated.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from services.trainer.run_config import LossSettings

# Log-ratios are clamped before exp so a far-off token cannot overflow to inf (whose
# backward would turn the zero gradient of a clipped branch into NaN).
MAX_LOG_RATIO = 20.0


@dataclass(frozen=True)
class LossTerms:
    """One batch's share of the global loss and the sums behind the step's statistics
    (detached, so they can be summed over micro-batches and ranks before dividing)."""

    loss: torch.Tensor  # differentiable scalar
    tokens: torch.Tensor  # tokens counted (mask sum)
    clipped_tokens: torch.Tensor  # tokens where the PPO clip cut the gradient
    dual_clipped_tokens: torch.Tensor  # negative-advantage tokens bounded by the dual clip
    kl_sum: torch.Tensor  # sum of the k3 KL over counted tokens (0 without a reference)


def ppo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    settings: LossSettings,
    global_rows: int,
    ref_logprobs: torch.Tensor | None = None,
) -> LossTerms:
    """``logprobs``, ``old_logprobs``, ``ref_logprobs`` and ``mask`` are [rows, tokens]
    (padding and masked rows have mask 0), ``advantages`` is [rows]; ``global_rows`` is the
    number of rows of the whole optimizer step, masked ones included."""
    if global_rows < 1:
        raise ValueError("global_rows must be at least 1")
    mask = mask.to(logprobs.dtype)
    advantage = advantages.to(logprobs.dtype)[:, None]
    ratio = torch.exp((logprobs - old_logprobs).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO))
    unclipped = -advantage * ratio
    clipped = -advantage * ratio.clamp(1.0 - settings.clip_low, 1.0 + settings.clip_high)
    ppo = torch.maximum(unclipped, clipped)
    bound = -advantage * settings.dual_clip
    negative = advantage < 0
    token_loss = torch.where(negative, torch.minimum(ppo, bound), ppo)

    counted = mask > 0
    kl_sum = torch.zeros((), dtype=logprobs.dtype, device=logprobs.device)
    if ref_logprobs is not None:
        delta = (ref_logprobs - logprobs).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO)
        kl = torch.exp(delta) - delta - 1.0
        token_loss = token_loss + settings.kl_coef * kl
        kl_sum = (kl.detach() * mask).sum()

    row_sums = (token_loss * mask).sum(dim=-1)
    return LossTerms(
        loss=settings.scale * row_sums.sum() / global_rows,
        tokens=mask.sum().detach(),
        clipped_tokens=((clipped > unclipped) & counted).sum().to(logprobs.dtype),
        dual_clipped_tokens=(negative & (ppo > bound) & counted).sum().to(logprobs.dtype),
        kl_sum=kl_sum,
    )
