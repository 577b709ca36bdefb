"""The state of rows decoded together: one shared KV cache, left-padded.

Every row's tokens end at the last column of the cache; the columns before a row's first token
are padding, masked out by its attention mask. Rows can leave (``select``), others can join
(``merge`` pads whichever side is shorter on the left), and columns no row uses any more are
dropped (``trim``), so the cache stays as wide as its longest live row.

Only full-attention ``DynamicLayer`` caches can be regrouped like this (``check_cache``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import torch
from transformers import DynamicCache, PreTrainedConfig
from transformers.cache_utils import DynamicLayer

from drkernel.errors import FailedPrecondition


def check_cache(config: PreTrainedConfig) -> None:
    """Refuses a model whose cache layers are not plain full-attention layers (sliding windows,
    linear attention): their state cannot be padded and regrouped by rows."""
    kinds = {type(layer).__name__ for layer in DynamicCache(config=config).layers}
    if kinds != {DynamicLayer.__name__}:
        raise FailedPrecondition(
            f"the transformers backend batches full-attention models only; this model's cache has {sorted(kinds)}"
        )


def _states(cache: DynamicCache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each layer's keys and values [rows, heads, columns, head dim] (``check_cache`` made sure
    every layer is a filled ``DynamicLayer``)."""
    layers = cast("list[DynamicLayer]", cache.layers)
    return [cast("tuple[torch.Tensor, torch.Tensor]", (layer.keys, layer.values)) for layer in layers]


def _left_pad(tensor: torch.Tensor, columns: int, dim: int) -> torch.Tensor:
    if columns == 0:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = columns
    return torch.cat([tensor.new_zeros(shape), tensor], dim=dim)


@dataclass
class KvBatch:
    """Rows in flight: their cache, attention mask [rows, columns], the position of each row's
    next input token [rows] and that token [rows]."""

    cache: DynamicCache
    mask: torch.Tensor
    positions: torch.Tensor
    tokens: torch.Tensor

    @property
    def rows(self) -> int:
        return int(self.mask.shape[0])

    @property
    def columns(self) -> int:
        return int(self.mask.shape[1])

    def select(self, rows: torch.Tensor) -> None:
        """Keeps the given rows, in that order (an index may repeat: a row is copied)."""
        self.cache.batch_select_indices(rows)
        self.mask, self.positions, self.tokens = self.mask[rows], self.positions[rows], self.tokens[rows]

    def merge(self, other: KvBatch) -> None:
        """Appends the rows of ``other``, padding the narrower cache on the left."""
        width = max(self.columns, other.columns)
        mine, theirs = width - self.columns, width - other.columns
        self.cache = DynamicCache(
            ddp_cache_data=[
                (
                    torch.cat([_left_pad(keys, mine, 2), _left_pad(their_keys, theirs, 2)]),
                    torch.cat([_left_pad(values, mine, 2), _left_pad(their_values, theirs, 2)]),
                )
                for (keys, values), (their_keys, their_values) in zip(
                    _states(self.cache), _states(other.cache), strict=True
                )
            ]
        )
        self.mask = torch.cat([_left_pad(self.mask, mine, 1), _left_pad(other.mask, theirs, 1)])
        self.positions = torch.cat([self.positions, other.positions])
        self.tokens = torch.cat([self.tokens, other.tokens])

    def trim(self) -> None:
        """Drops the leading columns that are padding in every row."""
        first = int(self.mask.any(dim=0).int().argmax())
        if first == 0:
            return
        self.cache = DynamicCache(
            ddp_cache_data=[(keys[:, :, first:], values[:, :, first:]) for keys, values in _states(self.cache)]
        )
        self.mask = self.mask[:, first:]
