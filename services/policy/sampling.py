"""Per-row token selection for a batch whose rows carry their own sampling parameters.

Each row's scores are shaped exactly as Hugging Face's ``TemperatureLogitsWarper`` and
``TopPLogitsWarper`` shape them (logits / T, then every token outside the smallest set whose
probability reaches top_p set to -inf); greedy rows keep the raw logits. The log-prob of a
token is ``log_softmax`` of those scores, so it is taken under the distribution the token was
drawn from (untempered for greedy decoding).

Sampled rows draw by inverse CDF with one uniform number per row and step, taken from the row's
own generator (``sample_rng``). A row's draws therefore depend on its request's seed and its
sample index only, never on which other rows share the batch.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch


def sample_rng(seed: int, index: int) -> random.Random:
    """The uniform numbers of sample ``index`` of a request seeded with ``seed`` (a string seed
    is hashed with SHA-512 by ``random``, so it is the same in every process)."""
    return random.Random(f"{seed}:{index}")


def shape_scores(logits: torch.Tensor, temperature: Sequence[float], top_p: Sequence[float]) -> torch.Tensor:
    """The scores each row samples from: float32 ``logits`` [rows, vocab] divided by the row's
    temperature and restricted to its top-p nucleus; rows with temperature 0 (greedy) and rows
    with top_p 1 are left as they are."""
    scores = logits.float()
    sampled = [i for i, t in enumerate(temperature) if t > 0]
    if sampled:
        divisor = torch.ones(scores.shape[0], 1, device=scores.device)
        divisor[sampled, 0] = torch.tensor([temperature[i] for i in sampled], device=scores.device)
        scores = scores / divisor
    nucleus = [i for i in sampled if top_p[i] < 1.0]
    if nucleus:
        rows = torch.tensor(nucleus, device=scores.device)
        # Removed: tokens whose cumulative probability, counted from the least likely, stays
        # within 1 - top_p; the most likely token always stays.
        outside = torch.tensor([1.0 - top_p[i] for i in nucleus], device=scores.device)[:, None]
        ascending, order = scores[rows].sort(dim=-1)
        remove = ascending.softmax(dim=-1).cumsum(dim=-1) <= outside
        remove[:, -1] = False
        scores[rows] = scores[rows].masked_fill(remove.scatter(1, order, remove), float("-inf"))
    return scores


def draw(scores: torch.Tensor, uniforms: Sequence[float | None]) -> torch.Tensor:
    """One token id per row: the argmax for rows whose uniform is None (greedy), else the token
    where the uniform falls on the row's cumulative distribution ``softmax(scores)``."""
    tokens = scores.argmax(dim=-1)
    sampled = [i for i, u in enumerate(uniforms) if u is not None]
    if not sampled:
        return tokens
    rows = torch.tensor(sampled, device=scores.device)
    probs = scores[rows].softmax(dim=-1).double()
    cdf = probs.cumsum(dim=-1)
    targets = torch.tensor([uniforms[i] for i in sampled], dtype=torch.float64, device=scores.device)
    picked = torch.searchsorted(cdf, (targets * cdf[:, -1])[:, None], right=True).squeeze(1)
    # Rounding can put the target on the total mass itself; the last token that has any
    # probability is then the one drawn, never one outside the nucleus.
    last = probs.shape[1] - 1 - (probs.flip(-1) > 0).int().argmax(dim=-1)
    tokens[rows] = torch.minimum(picked, last)
    return tokens
