"""Bit-level tensor comparison: the harness's evidence that memory did or did not change."""

from __future__ import annotations

from typing import Any

import torch


def bitwise_equal(a: Any, b: Any) -> bool:
    """Same shape, dtype and bytes (NaN payloads included)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    return bool(torch.equal(a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8)))
