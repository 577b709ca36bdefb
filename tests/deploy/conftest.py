"""The deploy tests render deploy/k8s once per session."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from .helpers import COMPONENTS, K8S, OVERLAYS, Variant, combination_names, render


@pytest.fixture(scope="session")
def variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Variant]:
    """Every overlay, and the base with every combination of the components, rendered."""
    directories = {f"overlays/{name}": (K8S / "overlays" / name, frozenset(parts)) for name, parts in OVERLAYS.items()}
    root = tmp_path_factory.mktemp("kustomize")
    for name in combination_names():
        parts = name.split("+")[1:]
        directory = root / name
        directory.mkdir()
        # kustomize refuses absolute paths to other kustomizations; relative ones may leave the tree.
        (directory / "kustomization.yaml").write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kustomize.config.k8s.io/v1beta1",
                    "kind": "Kustomization",
                    "resources": [os.path.relpath(K8S / "base", directory)],
                    "components": [os.path.relpath(COMPONENTS[part], directory) for part in parts],
                }
            )
        )
        directories[name] = (directory, frozenset(parts))
    with ThreadPoolExecutor(4) as pool:
        docs = dict(
            zip(directories, pool.map(render, (directory for directory, _ in directories.values())), strict=True)
        )
    return {name: Variant(name, parts, docs[name]) for name, (_, parts) in directories.items()}
