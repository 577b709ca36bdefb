"""Rendering deploy/k8s the way users combine it (`kubectl kustomize`, offline): the overlays,
and the base with every combination of the components."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
MONITORING = REPO / "deploy" / "monitoring"
# In the order an overlay lists them (../gpu patches the trainer Deployment that trainer-job replaces).
COMPONENTS = {
    "gpu": K8S / "components" / "gpu",
    "sandbox-root-isolation": K8S / "components" / "sandbox-root-isolation",
    "sandbox-pool": K8S / "components" / "sandbox-pool",
    "sandbox-gpu-pool": K8S / "components" / "sandbox-gpu-pool",
    "sandbox-runtime-class": K8S / "components" / "sandbox-runtime-class",
    "sandbox-autoscaling": K8S / "components" / "sandbox-autoscaling",
    "trainer-job": K8S / "components" / "trainer-job",
    "auth": K8S / "components" / "auth",
    "cert-manager": K8S / "components" / "cert-manager",
    "monitoring": MONITORING,
    "prometheus-operator": MONITORING / "prometheus-operator",
}
# What each component brings along (sandbox-gpu-pool includes two others).
INCLUDES = {"sandbox-gpu-pool": {"sandbox-pool", "sandbox-root-isolation"}}
PRODUCTION = {
    "sandbox-pool",
    "sandbox-autoscaling",
    "auth",
    "cert-manager",
    "monitoring",
    "prometheus-operator",
}
OVERLAYS = {
    "cpu-dev": {"monitoring"},
    "cpu": PRODUCTION,
    "gpu": PRODUCTION | {"gpu", "sandbox-gpu-pool", "trainer-job"} | INCLUDES["sandbox-gpu-pool"],
}


@dataclass(frozen=True)
class Variant:
    """One way of deploying: an overlay, or the base with some components."""

    name: str
    components: frozenset[str]
    docs: tuple[dict[str, Any], ...]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [doc for doc in self.docs if doc["kind"] == kind]

    def named(self, kind: str, name: str) -> dict[str, Any]:
        matches = [doc for doc in self.of_kind(kind) if doc["metadata"]["name"] == name]
        assert len(matches) == 1, f"{self.name}: expected one {kind} {name}, found {len(matches)}"
        return matches[0]


def kubectl() -> str:
    path = shutil.which("kubectl")
    if path is None:
        pytest.fail("kubectl is missing: it renders deploy/k8s (kubectl >= 1.27; the project's machines ship it)")
    return path


def render(directory: Path) -> tuple[dict[str, Any], ...]:
    result = subprocess.run([kubectl(), "kustomize", str(directory)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"kubectl kustomize {directory} failed:\n{result.stderr}"
    return tuple(doc for doc in yaml.load_all(result.stdout, Loader=yaml.CSafeLoader) if doc)


def combination_names() -> list[str]:
    """The base alone, with each component alone, and with every component at once (the
    overlays add the combinations they use)."""
    return ["base", *(f"base+{name}" for name in COMPONENTS), "base+all"]


def components_of(name: str) -> list[str]:
    """The components a combination name lists, in order ("all": every one)."""
    parts = name.split("+")[1:]
    return list(COMPONENTS) if parts == ["all"] else parts


VARIANT_NAMES = [f"overlays/{name}" for name in OVERLAYS] + combination_names()
