"""Shared fixtures of the trainer tests: the default model's tokenizer and a tiny random
policy model that uses it (real chat template, real vocabulary, seconds to train on a CPU)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.policy.helpers import build_tiny_model

os.environ["HF_HUB_OFFLINE"] = "1"


@pytest.fixture(scope="session")
def trainer_tokenizer() -> Any:
    """The embedded default model's tokenizer, read straight from its GGUF file (a few seconds;
    converting the whole model would take several times longer)."""
    from transformers import AutoTokenizer

    from services.policy.default_model import gguf_path

    source = gguf_path()
    return AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name, local_files_only=True)


@pytest.fixture(scope="session")
def tiny_policy_dir(tmp_path_factory: pytest.TempPathFactory, trainer_tokenizer: Any) -> Path:
    """A random 2-layer Qwen2 with the default tokenizer, saved as a model directory."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-policy"), trainer_tokenizer, seed=0)
