"""The deploy tests render deploy/k8s once per session."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from .helpers import COMPONENTS, INCLUDES, K8S, OVERLAYS, Variant, combination_names, components_of, render


@pytest.fixture(scope="session")
def variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Variant]:
    """Every overlay, and the base with the combinations of components of combination_names(), rendered."""
    directories = {f"overlays/{name}": (K8S / "overlays" / name, frozenset(parts)) for name, parts in OVERLAYS.items()}
    root = tmp_path_factory.mktemp("kustomize")
    for name in combination_names():
        parts = components_of(name)
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
        included = set(parts).union(*(INCLUDES.get(part, set()) for part in parts))
        directories[name] = (directory, frozenset(included))
    with ThreadPoolExecutor(4) as pool:
        docs = dict(
            zip(directories, pool.map(render, (directory for directory, _ in directories.values())), strict=True)
        )
    return {name: Variant(name, parts, docs[name]) for name, (_, parts) in directories.items()}
