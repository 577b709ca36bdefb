"""Task parsing, the inputs module the candidate sees, and size-constant rewriting."""

from __future__ import annotations

import pytest

from drkernel.errors import InvalidArgument
from services.sandbox.shared.task_source import (
    parse_task,
    resized_plans,
    syntax_error,
    tiny_plans,
    with_constants,
)
from tests.sandbox.conftest import source

MATMUL_TASK = """import torch
import torch.nn as nn


class Helper(nn.Module):
    def forward(self, x):
        return x


class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


M = 1024 * 2  # a literal expression
K = 64
N = M // 4
reduce_dim = 1
scale = 0.5


def _rand(*shape):
    return torch.randn(*shape)


def reference_helper():
    return Model()


def get_inputs():
    return [_rand(M, K), _rand(K, N)]


def get_init_inputs():
    return []
"""


def test_parse_finds_integer_constants_including_literal_arithmetic():
    task = parse_task(MATMUL_TASK)
    assert {c.name: c.value for c in task.constants} == {"M": 2048, "K": 64, "reduce_dim": 1}
    assert task.sizes(8) == {"M": 2048, "K": 64}


def test_inputs_module_keeps_inputs_and_helpers_but_no_model():
    inputs = parse_task(MATMUL_TASK).inputs_source
    assert "class " not in inputs and "torch.matmul" not in inputs
    assert "def _rand" in inputs and "def get_inputs" in inputs and "def get_init_inputs" in inputs
    assert "reference_helper" not in inputs
    namespace: dict[str, object] = {}
    exec(compile(inputs, "inputs.py", "exec"), namespace)
    a, b = namespace["get_inputs"]()  # type: ignore[operator]
    assert a.shape == (2048, 64) and b.shape == (64, 512)


@pytest.mark.parametrize(
    ("source_text", "missing"),
    [
        ("import torch\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n", "Model"),
        ("class Model: pass\ndef get_init_inputs(): return []\n", "get_inputs"),
        ("class Model: pass\ndef get_inputs(): return []\n", "get_init_inputs"),
    ],
)
def test_parse_refuses_tasks_missing_a_required_name(source_text, missing):
    with pytest.raises(InvalidArgument, match=missing):
        parse_task(source_text)


def test_parse_refuses_invalid_python_with_the_line():
    with pytest.raises(InvalidArgument, match="line 1"):
        parse_task("class Model(:\n")


def test_with_constants_rewrites_values_in_place_and_dependents_follow():
    rewritten = with_constants(MATMUL_TASK, {"M": 1537})
    assert rewritten.count("\n") == MATMUL_TASK.count("\n")
    assert "M = 1537  # a literal expression" in rewritten
    namespace: dict[str, object] = {}
    exec(compile(rewritten, "task.py", "exec"), namespace)
    assert namespace["N"] == 1537 // 4


def test_with_constants_rejects_unknown_names():
    with pytest.raises(KeyError, match="scale"):
        with_constants(MATMUL_TASK, {"scale": 3})


def test_plans():
    sizes = {"batch_size": 16, "dim": 1024}
    assert tiny_plans(sizes, 4) == [{"batch_size": 4, "dim": 4}, {"batch_size": 8, "dim": 8}, {"dim": 16}]
    assert resized_plans(sizes)[0] == {"batch_size": 13, "dim": 769}
    assert resized_plans(sizes)[1] == {"batch_size": 8, "dim": 512}
    assert resized_plans({}) == []


def test_syntax_error():
    assert syntax_error(source("relu_triton.py")) is None
    assert "line 4" in (syntax_error(source("relu_syntax_error.py")) or "")
