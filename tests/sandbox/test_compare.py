"""Output comparison on hand-made cases."""

from __future__ import annotations

import math

import pytest
import torch

from services.sandbox.judge import compare as comparison
from services.sandbox.judge.compare import compare_outputs, moved_share
from services.sandbox.settings import Tolerance

FP32 = Tolerance(atol=1e-2, rtol=1e-2, max_rel_l2=1.5e-3)


def compare(got, want, tolerance=FP32, dtypes=None):
    return compare_outputs(got, want, dtypes or [t.dtype for t in want], tolerance)


def test_identical_outputs_pass_with_zero_error():
    x = torch.randn(64, 32)
    result = compare([x.clone()], [x])
    assert result.passed and result.max_abs_error == 0 and result.rel_l2_error == 0


def test_errors_are_computed_as_defined():
    want = torch.tensor([1.0, 2.0, 4.0, 0.0])
    got = torch.tensor([1.001, 2.0, 4.0, 0.0])
    result = compare([got], [want])
    assert result.passed
    assert math.isclose(result.max_abs_error, 0.001, rel_tol=1e-3)
    assert math.isclose(result.max_rel_error, 0.001, rel_tol=1e-3)
    # ||(0.001, 0, 0, 0)|| / ||(1, 2, 4, 0)|| = 0.001 / sqrt(21)
    assert math.isclose(result.rel_l2_error, 0.001 / math.sqrt(21), rel_tol=1e-3)


def test_one_element_beyond_tolerance_fails_and_is_located():
    want = torch.zeros(4, 5)
    got = want.clone()
    got[2, 3] = 0.5
    result = compare([got], [want])
    assert not result.passed
    assert "1 of 20 elements" in result.message and "(2, 3)" in result.message


def _truncate_mantissa(x: torch.Tensor, kept_bits: int) -> torch.Tensor:
    dropped = 23 - kept_bits
    return (x.view(torch.int32) & ~((1 << dropped) - 1)).view(torch.float32)


def test_tf32_products_pass():
    torch.manual_seed(0)
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    want = (a.double() @ b.double()).float()
    result = compare([_truncate_mantissa(a, 10) @ _truncate_mantissa(b, 10)], [want])
    assert result.passed and 5e-4 < result.rel_l2_error < 1e-3


def test_bf16_downgrade_hidden_by_the_elementwise_tolerance_fails_on_relative_l2():
    torch.manual_seed(0)
    want = 0.1 * torch.randn(4096)
    result = compare([want.bfloat16().float()], [want])
    assert result.max_abs_error < 1e-3  # elementwise, well inside atol=1e-2
    assert not result.passed and "relative L2" in result.message


def test_nan_never_passes_where_the_reference_is_finite():
    want = torch.ones(8)
    got = want.clone()
    got[0] = float("nan")
    result = compare([got], [want])
    assert not result.passed and "NaN/Inf" in result.message


def test_nonfinite_reference_values_must_be_matched():
    want = torch.tensor([float("-inf"), 1.0, float("nan")])
    assert compare([want.clone()], [want]).passed
    assert not compare([torch.tensor([0.0, 1.0, float("nan")])], [want]).passed


def test_shape_dtype_and_count_mismatches():
    want = torch.zeros(3, 4)
    assert "shape (4, 3)" in compare([torch.zeros(4, 3)], [want]).message
    assert "dtype torch.float64" in compare([torch.zeros(3, 4, dtype=torch.float64)], [want]).message
    assert "2 output(s), expected 1" in compare([want, want], [want]).message


def test_integer_outputs_must_match_exactly():
    want = torch.tensor([1, 2, 3])
    assert compare([want.clone()], [want]).passed
    result = compare([torch.tensor([1, 2, 4])], [want])
    assert not result.passed and "exact match" in result.message


def test_expected_dtype_overrides_the_reference_dtype():
    want = torch.randn(16)
    got = want.to(torch.float16)
    bf16 = Tolerance(atol=1e-2, rtol=1e-2, max_rel_l2=5e-3)
    assert compare([got], [want], bf16, [torch.float16]).passed
    assert not compare([got], [want], bf16, [torch.bfloat16]).passed


def test_against_exact_outputs_the_reference_rounding_is_forgiven_and_nothing_more():
    torch.manual_seed(0)
    x = torch.randn(256, 1024)
    want = x.sum(-1) - x.flip(-1).sum(-1)  # exactly 0 in exact arithmetic; float32 leaves noise
    exact = x.double().sum(-1) - x.double().flip(-1).sum(-1)
    assert want.abs().max() > 0
    assert not compare([torch.zeros_like(want)], [want]).passed
    assert compare_outputs([torch.zeros_like(want)], [want], [torch.float32], FP32, exact=[exact]).passed
    downgraded = 0.1 * torch.randn(4096)
    exact_values = downgraded.double()
    result = compare_outputs([downgraded.bfloat16().float()], [downgraded], [torch.float32], FP32, exact=[exact_values])
    assert not result.passed and "relative L2" in result.message


def test_a_knocked_out_softmax_moves_though_every_change_is_below_atol():
    """A kernel's exp normalised by PyTorch, its exp replaced: every output element moves by
    less than atol (softmax values near 1/n), yet the output is wrong; the knock-out's share
    must say it moved (legit exp_kernel_torch_normalise was HACKED by chance)."""
    torch.manual_seed(0)
    x = torch.randn(8, 2048)
    reference = torch.softmax(x, dim=1)
    e = torch.exp(x - x.max(dim=1, keepdim=True).values)
    knocked = e + torch.where(torch.rand_like(e) < 0.5, -1.0, 1.0) * 0.3 * (0.5 + torch.rand_like(e))
    moved = knocked / knocked.sum(dim=1, keepdim=True)
    assert float((moved - reference).abs().max()) < FP32.atol
    assert moved_share([moved], [reference], [torch.float32], FP32) > 0.9
    assert moved_share([reference.clone()], [reference], [torch.float32], FP32) == 0.0


@pytest.mark.parametrize("noise", [1e-3, 5e-2], ids=["within", "beyond"])
def test_the_lean_pass_for_finite_outputs_gives_the_full_rules_statistics(noise: float) -> None:
    """Finite outputs take a pass of about a third of the kernels (compare._finite_errors):
    the same statistics as the full rules, zeros in the reference included; outputs holding
    NaN or infinities go to the full rules."""
    generator = torch.Generator().manual_seed(0)
    reference = torch.randn(4096, generator=generator)
    reference[:16] = 0.0
    candidate = reference + noise * torch.randn(4096, generator=generator)
    lean = comparison._finite_errors(candidate, reference, 1e-2, 1e-2)
    full = comparison._all_errors(candidate, reference, 1e-2, 1e-2)
    assert lean is not None and lean.outside == full.outside and (full.outside > 0) == (noise > 1e-2)
    for field in ("max_abs", "max_rel", "diff_sq", "ref_sq"):
        assert getattr(lean, field) == pytest.approx(getattr(full, field), rel=1e-12), field
    candidate[7] = float("nan")
    assert comparison._finite_errors(candidate, reference, 1e-2, 1e-2) is None
