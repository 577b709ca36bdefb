"""The shared, left-padded KV cache: rows join, leave and unused columns go."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoConfig, DynamicCache, MistralConfig

from drkernel.errors import FailedPrecondition
from services.policy.kv_batch import KvBatch, check_cache


def _batch(lengths: list[int], width: int, fill: float, layers: int = 2) -> KvBatch:
    """Rows whose real tokens end at the last column; keys/values hold ``fill + row`` on real
    columns and 0 on padding."""
    mask = torch.zeros(len(lengths), width, dtype=torch.long)
    for row, length in enumerate(lengths):
        mask[row, width - length :] = 1
    states = mask[:, None, :, None].float() * (fill + torch.arange(len(lengths)).float())[:, None, None, None]
    states = states.expand(-1, 2, -1, 3).contiguous()  # [rows, heads, columns, head dim]
    cache = DynamicCache(ddp_cache_data=[(states, -states) for _ in range(layers)])
    return KvBatch(cache, mask, torch.tensor(lengths), torch.arange(len(lengths)))


def _keys(batch: KvBatch) -> torch.Tensor:
    """Layer 0's keys, one value per (row, column)."""
    return batch.cache.layers[0].keys[:, 0, :, 0]


def test_merging_pads_the_narrower_side_on_the_left() -> None:
    running = _batch([3, 2], width=3, fill=10)
    joining = _batch([5], width=5, fill=20)
    running.merge(joining)
    assert running.mask.tolist() == [[0, 0, 1, 1, 1], [0, 0, 0, 1, 1], [1, 1, 1, 1, 1]]
    assert _keys(running).tolist() == [[0, 0, 10, 10, 10], [0, 0, 0, 11, 11], [20, 20, 20, 20, 20]]
    assert torch.equal(running.cache.layers[1].values, -running.cache.layers[1].keys)
    assert running.positions.tolist() == [3, 2, 5]
    assert running.tokens.tolist() == [0, 1, 0]
    assert running.cache.get_seq_length() == running.columns == 5

    short = _batch([1], width=1, fill=30)
    running.merge(short)
    assert running.mask[-1].tolist() == [0, 0, 0, 0, 1]
    assert _keys(running)[-1].tolist() == [0, 0, 0, 0, 30]


def test_rows_leave_and_columns_no_row_uses_are_dropped() -> None:
    batch = _batch([6, 2, 3], width=6, fill=1)
    batch.select(torch.tensor([2, 1]))
    assert batch.positions.tolist() == [3, 2] and batch.tokens.tolist() == [2, 1]
    batch.trim()
    assert batch.mask.tolist() == [[1, 1, 1], [0, 1, 1]]
    assert _keys(batch).tolist() == [[3, 3, 3], [0, 2, 2]]
    assert batch.cache.get_seq_length() == 3


def test_a_row_can_be_copied_for_each_sample() -> None:
    batch = _batch([2], width=2, fill=5)
    batch.select(torch.tensor([0, 0, 0]))
    assert batch.rows == 3
    assert _keys(batch).tolist() == [[5, 5]] * 3


def test_models_with_sliding_window_caches_are_refused() -> None:
    config = MistralConfig(num_hidden_layers=2, sliding_window=16, hidden_size=32, num_attention_heads=4)
    with pytest.raises(FailedPrecondition, match="full-attention models only"):
        check_cache(config)
    check_cache(AutoConfig.for_model("qwen2", num_hidden_layers=2))  # full attention: accepted
