"""Strict checks of the custom resources in deploy/k8s, for which kubernetes-validate has no
schemas: each kind is checked against the typed models its project's API is published as
(pydantic models generated from the CRDs: kubeflow-trainer-api for JobSet, cloudcoil's for the
Prometheus Operator and cert-manager), refusing unknown fields at every level as
`kubernetes-validate --strict` does, and a JobSet's Job templates are validated as batch/v1 Jobs
against Kubernetes' own schema."""

from __future__ import annotations

import copy
import importlib
import types
from typing import Annotated, Any, Union, get_args, get_origin

import kubernetes_validate
import pydantic

MODELS = {
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): (
        "kubeflow_trainer_api.models.jobset_v1alpha2_job_set",
        "JobsetV1alpha2JobSet",
    ),
    ("monitoring.coreos.com/v1", "PodMonitor"): ("cloudcoil.models.prometheus_operator.v1", "PodMonitor"),
    ("monitoring.coreos.com/v1", "PrometheusRule"): ("cloudcoil.models.prometheus_operator.v1", "PrometheusRule"),
    ("cert-manager.io/v1", "Certificate"): ("cloudcoil.models.cert_manager.v1", "Certificate"),
    ("cert-manager.io/v1", "Issuer"): ("cloudcoil.models.cert_manager.v1", "Issuer"),
}


def is_custom(doc: dict[str, Any]) -> bool:
    """Whether ``doc`` is of an API group Kubernetes itself does not serve."""
    group = doc["apiVersion"].rpartition("/")[0]
    return "." in group and not group.endswith(".k8s.io")


def model_for(doc: dict[str, Any]) -> type[pydantic.BaseModel]:
    key = (doc["apiVersion"], doc["kind"])
    if key not in MODELS:
        raise AssertionError(f"{doc['kind']} ({doc['apiVersion']}) has no model to check it against: add it to MODELS")
    module, name = MODELS[key]
    try:
        model: type[pydantic.BaseModel] = getattr(importlib.import_module(module), name)
    except ImportError as error:
        raise AssertionError(f"{error.name} is missing: it is in the dev extra (pip install -e '.[dev]')") from None
    return model


def unknown_fields(model: type[pydantic.BaseModel], data: dict[str, Any], path: str = "") -> list[str]:
    """Paths of the keys of ``data`` that ``model`` (and the models of its fields) does not know."""
    if issubclass(model, pydantic.RootModel):
        return _unknown(model.model_fields["root"].annotation, data, path)
    fields = {field.alias or name: field for name, field in model.model_fields.items()}
    found = []
    for key, value in data.items():
        if key not in fields:
            found.append(f"{path}.{key}")
        else:
            found += _unknown(fields[key].annotation, value, f"{path}.{key}")
    return found


def _unknown(annotation: Any, value: Any, path: str) -> list[str]:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _unknown(args[0], value, path)
    if origin in (Union, types.UnionType):
        candidates = [_unknown(arg, value, path) for arg in args if arg is not type(None)]
        return min(candidates, key=len) if candidates else []
    if origin is list and isinstance(value, list):
        return [problem for i, item in enumerate(value) for problem in _unknown(args[0], item, f"{path}[{i}]")]
    if origin is dict and isinstance(value, dict):
        return [problem for key, item in value.items() for problem in _unknown(args[1], item, f"{path}.{key}")]
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel) and isinstance(value, dict):
        return unknown_fields(annotation, value, path)
    return []


def validate(doc: dict[str, Any], kubernetes_version: str) -> None:
    """Raises AssertionError naming what is wrong with the custom resource ``doc``."""
    where = f"{doc['kind']} {doc['metadata']['name']}"
    model = model_for(doc)
    checked = copy.deepcopy(doc)
    if doc["kind"] == "JobSet":  # the Job templates go to Kubernetes' own schema below
        for replicated in checked["spec"]["replicatedJobs"]:
            replicated["template"] = {}
    unknown = unknown_fields(model, checked)
    assert not unknown, f"{where}: unknown fields {unknown}"
    try:
        model.model_validate(checked)
    except pydantic.ValidationError as error:
        raise AssertionError(f"{where}: {error}") from None
    if doc["kind"] == "JobSet":
        for replicated in doc["spec"]["replicatedJobs"]:
            job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": replicated["name"]}}
            job["spec"] = replicated["template"]["spec"]
            try:
                kubernetes_validate.validate(job, kubernetes_version, strict=True)
            except kubernetes_validate.ValidationError as error:
                raise AssertionError(f"{where}: Job template {replicated['name']}: {error}") from None
