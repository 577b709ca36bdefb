"""What a kernel may call while it compiles (services/sandbox/candidate/compile_watch.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.compiler.code_generator import CodeGenerator

from services.sandbox.candidate.compile_watch import foreign


def _helper() -> None:
    return None


@pytest.mark.parametrize(
    "fn",
    [len, min, abs, math.log2, tl.constexpr, tl.core.dtype("fp32").is_fp16, "x{}".format, triton.cdiv, int],
    ids=["len", "min", "abs", "math.log2", "tl.constexpr", "dtype method", "str method", "cdiv", "int"],
)
def test_triton_and_builtins_of_plain_values_may_be_called(fn):
    assert not foreign(fn, CodeGenerator.builtin_namespace)


@pytest.mark.parametrize(
    "fn",
    [torch.relu, torch.Tensor.copy_, np.maximum, exec, setattr, _helper, object()],
    ids=["torch.relu", "Tensor.copy_", "np.maximum", "exec", "setattr", "own function", "object"],
)
def test_anything_else_is_foreign(fn):
    assert foreign(fn, CodeGenerator.builtin_namespace)
