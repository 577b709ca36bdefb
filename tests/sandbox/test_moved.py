"""moved.py: a tensor that holds another argument's values moved whole (a crop, a strided
slice, a transpose, a broadcast, rows taken whole from a result made in the same call) is a
copy; a selection that depends on the data, or a computation, is not."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from services.sandbox.candidate.moved import moved_source

torch.manual_seed(0)
X = torch.randn(64, 33)
RELU = torch.relu(torch.randn(65, 32))
BUFFER = torch.randn(64 * 32 + 1)
ROWS = torch.randn(64)
TWICE = torch.randn(2048).repeat(2)
PADDED = torch.randn(65, 32)
LARGE = torch.randn(512, 513)  # through float16, its values repeat: located by their neighbours
SQUARE = torch.randn(64, 64)
PERMUTATION = torch.randperm(65)[:64]
INDICES = torch.randint(0, 64, (40,))


def _half_written() -> tuple[torch.Tensor, torch.Tensor]:
    """The first half of X's crop written by one launch, the rest not yet (NaN)."""
    tensor = torch.full((64, 32), float("nan"))
    tensor[:32] = X[:32, :32]
    mask = torch.zeros(64, 32, dtype=torch.bool)
    mask[:32] = True
    return tensor, mask.flatten()


MOVED = {
    "crop of columns": (X[:, :32], X),
    "crop of rows": (X[1:], X),
    "transpose in a longer buffer": (BUFFER[: 64 * 32].view(32, 64).t(), BUFFER),
    "crop of a ReLU (repeated zeros)": (RELU[:64], RELU),
    "crop cast to float16": (X[:, :32].to(torch.float16), X),
    "crop through float16": (X[:, :32].half().float(), X),
    "crop of a large result through float16": (LARGE[:, :512].half().float(), LARGE),
    "broadcast of rows": (ROWS[:, None].expand(64, 32), ROWS),
    "first half of a doubled result": (TWICE[:2048].view(64, 32), TWICE),
    "rows rolled": (torch.roll(PADDED, 7, 0)[:64], PADDED),
    "rows in a fixed random order": (PADDED[PERMUTATION], PADDED),
}
WORK = {
    "max-pool": (F.max_pool2d(SQUARE[None], 2)[0], SQUARE),
    "row maximum broadcast": (SQUARE.amax(1, keepdim=True).expand(64, 8), SQUARE),
    "ReLU of a crop": (torch.relu(SQUARE[:32]), SQUARE),
    "top-k": (SQUARE.topk(8, dim=1).values, SQUARE),
    "rows sorted": (SQUARE[:, :40].sort(dim=1).values, SQUARE),
    "GELU of a crop": (F.gelu(X[:, :32]), X),
    "rescaled crop": (X[:, :32] * 2, X),
}


def _source(written: torch.Tensor, source: torch.Tensor, made_in_call: bool = True, mask=None) -> torch.Tensor | None:
    count = written.numel() if mask is None else int(mask.sum())
    generator = torch.Generator().manual_seed(1)
    return moved_source(written, count, mask, [(source, source)], generator, 0.99, lambda _t: made_in_call)


@pytest.mark.parametrize("case", list(MOVED))
def test_values_moved_whole_are_a_copy(case: str) -> None:
    written, source = MOVED[case]
    assert _source(written.contiguous(), source) is source


@pytest.mark.parametrize("case", list(WORK))
def test_a_selection_or_a_computation_is_not(case: str) -> None:
    written, source = WORK[case]
    assert _source(written.contiguous(), source) is None


def test_part_of_a_tensor_written_by_one_launch_is_judged_on_that_part() -> None:
    written, mask = _half_written()
    assert _source(written, X, mask=mask) is X


def test_rows_gathered_from_a_weight_kept_from_before_are_the_tasks_work() -> None:
    """An embedding: rows of a weight taken by index. Only a result made in the call is held
    to rows in any order (an affine map must fit anything else)."""
    assert _source(SQUARE[INDICES].contiguous(), SQUARE, made_in_call=False) is None
    assert _source(PADDED[PERMUTATION].contiguous(), PADDED, made_in_call=False) is None
