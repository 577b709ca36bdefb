"""The reference's identity tails (judge/identity_tail.py): an output equal to a result its
forward made before, on real PyTorch operators."""

from collections.abc import Callable

import pytest
import torch

from services.sandbox.judge.identity_tail import _earlier_equal, _ResultSamples

X, W = torch.randn(8, 16, generator=torch.Generator().manual_seed(0)), torch.randn(4, 16)


def _clamp_wide() -> torch.Tensor:
    return torch.clamp(X @ W.t(), -1e3, 1e3)


def _size_one_reductions() -> torch.Tensor:  # KernelBench level-2 problem 18's tail
    h = (X @ W.t()).sum(1, keepdim=True)
    return torch.logsumexp(torch.mean(torch.max(h, 1, keepdim=True)[0], 1, keepdim=True), 1, keepdim=True)


def _clamp_in_place() -> torch.Tensor:
    h = X @ W.t()
    h.clamp_(-1e3, 1e3)
    return h


def _clamp_that_bites() -> torch.Tensor:
    return torch.clamp(X @ W.t(), -0.5, 0.5)


def _relu() -> torch.Tensor:
    return torch.relu(X)


def _view_of_the_product() -> torch.Tensor:
    return (X @ W.t()).view(-1)


def _scaled() -> torch.Tensor:
    return torch.relu(X @ W.t()) * 2


def _copied_after_the_output() -> torch.Tensor:
    out = torch.clamp(X @ W.t(), -0.5, 0.5)
    out.clone()  # a result made from the output after it is no earlier result
    return out


@pytest.mark.parametrize(
    ("forward", "tail"),
    [
        (_clamp_wide, True),
        (_size_one_reductions, True),
        (_clamp_in_place, True),
        (_clamp_that_bites, False),
        (_relu, False),
        (_view_of_the_product, False),
        (_scaled, False),
        (_copied_after_the_output, False),
    ],
)
def test_an_output_equal_to_an_earlier_result_is_an_identity_tail(forward: Callable[[], torch.Tensor], tail: bool):
    with _ResultSamples() as recorder:
        output = forward()
    assert _earlier_equal(recorder.samples, output) is tail
