"""What a KernelBench module binds, the one rule for policy and sandbox alike."""

from __future__ import annotations

import ast

import pytest

from drkernel.kernelbench import defines_model_new, module_level_names


@pytest.mark.parametrize(
    "source",
    [
        "class ModelNew:\n    pass\n",
        "from elsewhere import Fast as ModelNew\n",
        "import torch\nModelNew = torch.nn.Identity\n",
    ],
)
def test_a_candidate_may_bind_model_new_any_way_the_harness_accepts(source):
    assert defines_model_new(ast.parse(source))


@pytest.mark.parametrize(
    "source",
    [
        "class Model:\n    pass\n",
        "def build():\n    class ModelNew:\n        pass\n    return ModelNew\n",
        "x = 'ModelNew'\n",
    ],
)
def test_model_new_must_be_bound_at_top_level(source):
    assert not defines_model_new(ast.parse(source))


def test_module_level_names_cover_classes_functions_assignments_and_imports():
    tree = ast.parse(
        "import a.b\nfrom c import d as e\nclass F: ...\ndef g(): ...\nh, (i, j) = 1, (2, 3)\nk: int = 4\n"
    )
    assert module_level_names(tree) == {"a", "e", "F", "g", "h", "i", "j", "k"}
