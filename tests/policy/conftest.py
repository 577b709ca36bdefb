"""Shared fixtures of the policy tests.

Model loads are the slow part on a 2-core machine, so the expensive things are built once per
session: the embedded default model is converted into a session cache, and tiny random models
are built from a config with its tokenizer (the suite's ``tokenizer``, tests/conftest.py).
Servers and engines run on the suite's shared background event loop (tests/conftest.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from .helpers import build_tiny_model

os.environ["HF_HUB_OFFLINE"] = "1"


@pytest.fixture(scope="session")
def policy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory of this session: the default model is converted from its GGUF here."""
    return tmp_path_factory.mktemp("policy-cache")


@pytest.fixture(scope="session")
def default_model_dir(policy_cache: Path) -> Path:
    from services.policy.default_model import ensure_default_model

    return ensure_default_model(policy_cache)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, tokenizer: Any) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"), tokenizer, seed=0)


@pytest.fixture(scope="session")
def other_tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, tokenizer: Any) -> Path:
    """The same architecture with other random weights: a 'trained' checkpoint."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model-2"), tokenizer, seed=1)


@pytest.fixture(scope="session")
def tiny_settings(tiny_model_dir: Path, policy_cache: Path) -> Any:
    from services.policy.settings import PolicySettings, TransformersSettings

    return PolicySettings(
        backend="transformers",
        model=tiny_model_dir,
        cache_dir=policy_cache,
        max_n=8,
        transformers=TransformersSettings(max_batch_size=4),
        default_max_tokens=16,
        queue_capacity=4,
    )
