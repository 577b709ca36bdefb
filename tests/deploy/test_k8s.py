"""deploy/k8s: every overlay and combination of components renders, passes Kubernetes' schemas
strictly, and keeps the contract the services rely on (ports, probes, lock-down, settings)."""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

import kubernetes_validate
import pytest

from drkernel.cli import build_parser
from drkernel.config import load_settings
from services.sandbox.settings import IsolationSettings

from . import crds
from .helpers import MONITORING, REPO, VARIANT_NAMES, Variant

# The oldest release the default sandbox isolation is written for (pod user namespaces and
# ProcMountType) and the newest whose schemas kubernetes-validate bundles.
KUBERNETES_VERSIONS = ("1.33.0", "1.37.0")
SERVICES = ("sandbox", "profiler", "policy", "trainer")
# What the root isolation grants the sandbox (components/sandbox-root-isolation), nothing more.
ROOT_CAPABILITIES = {"SYS_ADMIN", "NET_ADMIN", "SETUID", "SETGID", "CHOWN", "DAC_OVERRIDE"}


def pod_templates(variant: Variant) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(workload, pod template) of every Deployment and every JobSet's replicated jobs."""
    found = [(deployment, deployment["spec"]["template"]) for deployment in variant.of_kind("Deployment")]
    for jobset in variant.of_kind("JobSet"):
        found += [(jobset, job["template"]["spec"]["template"]) for job in jobset["spec"]["replicatedJobs"]]
    return found


def containers(
    variant: Variant, kind: str | None = None
) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """(workload, pod spec, container) for every container of every workload (of ``kind``)."""
    found = [
        (workload, template["spec"], container)
        for workload, template in pod_templates(variant)
        if kind in (None, workload["kind"])
        for container in template["spec"]["containers"]
    ]
    assert found, f"{variant.name} has no containers"
    return found


def port(container: dict[str, Any], name: str) -> int:
    numbers = [p["containerPort"] for p in container.get("ports", []) if p.get("name") == name]
    assert len(numbers) == 1, f"container {container['name']} needs exactly one port named {name!r}"
    return numbers[0]


_UNITS = {"m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(value: str | int) -> float:
    match = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", str(value))
    assert match and match.group(2) in _UNITS, f"unreadable quantity {value!r}"
    return float(match.group(1)) * _UNITS[match.group(2)]


@pytest.mark.slow
@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_variant_validates_strictly(variants: dict[str, Variant], version: str) -> None:
    """Each distinct object of every variant passes the schemas with unknown fields refused."""
    distinct: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for variant in variants.values():
        for doc in variant.docs:
            distinct.setdefault(json.dumps(doc, sort_keys=True), (doc, []))[1].append(variant.name)
    failures = []
    for doc, names in distinct.values():
        try:
            if crds.is_custom(doc):
                crds.validate(doc, version)
            else:
                kubernetes_validate.validate(doc, version, strict=True)
        except (kubernetes_validate.ValidationError, AssertionError) as error:
            failures.append(f"{doc['kind']} {doc['metadata']['name']} (in {', '.join(names)}): {error}")
    assert not failures, f"invalid for Kubernetes {version}:\n" + "\n".join(failures)


def test_strict_validation_rejects_unknown_fields(variants: dict[str, Variant]) -> None:
    deployment = copy.deepcopy(variants["overlays/cpu-dev"].named("Deployment", "sandbox"))
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]["procMnt"] = "Unmasked"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_every_service_has_deployment_service_and_account(variants: dict[str, Variant], name: str) -> None:
    variant = variants[name]
    for service in SERVICES:
        if service == "trainer" and "trainer-job" in variant.components:
            continue  # a JobSet, tested below
        deployment = variant.named("Deployment", service)
        pod = deployment["spec"]["template"]["spec"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert labels["app.kubernetes.io/part-of"] == "drkernel"
        account = variant.named("ServiceAccount", service)
        assert account["automountServiceAccountToken"] is False
        assert pod["serviceAccountName"] == service and pod["automountServiceAccountToken"] is False
        svc = variant.named("Service", service)
        assert svc["spec"]["selector"].items() <= labels.items()
        (container,) = pod["containers"]
        for port_name in ("grpc", "metrics"):
            (svc_port,) = [p for p in svc["spec"]["ports"] if p["name"] == port_name]
            assert svc_port["targetPort"] == port_name
            assert svc_port["port"] == port(container, port_name)


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_containers_are_locked_down(variants: dict[str, Variant], name: str) -> None:
    variant = variants[name]
    root = "sandbox-root-isolation" in variant.components
    for deployment, pod, container in containers(variant):
        where = f"{name}: {deployment['metadata']['name']}/{container['name']}"
        sandbox = deployment["metadata"]["name"] == "sandbox"
        pod_context = pod.get("securityContext", {})
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False, where
        assert context["readOnlyRootFilesystem"] is True, where
        assert context.get("privileged", False) is False, where
        assert context["capabilities"]["drop"] == ["ALL"], where
        assert set(context["capabilities"].get("add", [])) == (ROOT_CAPABILITIES if sandbox and root else set()), where
        assert context.get("runAsNonRoot", pod_context.get("runAsNonRoot")) is (not (sandbox and root)), where
        seccomp = context.get("seccompProfile", pod_context.get("seccompProfile", {})).get("type")
        # bubblewrap needs clone/unshare/mount/pivot_root, which RuntimeDefault refuses.
        assert seccomp == ("Unconfined" if sandbox else "RuntimeDefault"), where
        if not sandbox:
            assert "appArmorProfile" not in context and "procMount" not in context, where
        if context.get("procMount") == "Unmasked":
            assert pod.get("hostUsers") is False, f"{where}: an unmasked /proc only inside a pod user namespace"
        if sandbox and not root:
            assert pod.get("hostUsers") is False and context.get("procMount") == "Unmasked", where
        if sandbox and root:  # uids are the host's: claims must be node-wide (services/sandbox/server/uids.py)
            lock_dir = str(IsolationSettings().uid_lock_dir)
            (claims,) = [m for m in container["volumeMounts"] if m["mountPath"] == lock_dir]
            (volume,) = [v for v in pod["volumes"] if v["name"] == claims["name"]]
            assert volume["hostPath"]["type"] == "DirectoryOrCreate", where


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_ports_probes_resources_and_scraping(variants: dict[str, Variant], name: str) -> None:
    variant = variants[name]
    for deployment, pod, container in containers(variant):
        where = f"{name}: {deployment['metadata']['name']}/{container['name']}"
        metrics_port = port(container, "metrics")
        if deployment["kind"] == "Deployment":
            # The kubelet's grpc probes speak plaintext only: with TLS (auth) they call the
            # plaintext health port the server opens beside its own (server.health_port).
            health = f"DRKERNEL_{deployment['metadata']['name'].upper()}__SERVER__HEALTH_PORT"
            env = {item["name"]: item.get("value") for item in container.get("env", [])}
            if "auth" in variant.components:
                probed = port(container, "health")
                assert env[health] == str(probed), f"{where}: {health} is not the health port {probed}"
            else:
                probed = port(container, "grpc")
                assert health not in env, f"{where}: a health port without TLS"
                assert "health" not in {p["name"] for p in container["ports"]}, where
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                assert container[probe]["grpc"] == {"port": probed}, f"{where}: {probe} is {container[probe]}"
                assert not {"tcpSocket", "httpGet", "exec"} & container[probe].keys(), where
        resources = container["resources"]
        for resource in ("cpu", "memory", "ephemeral-storage"):
            request, limit = resources["requests"][resource], resources["limits"][resource]
            assert quantity(request) <= quantity(limit), f"{where}: {resource} request above its limit"
        workload = deployment["metadata"]["name"]
        on_gpu = (
            ("gpu" in variant.components and workload in {"policy", "trainer"})
            or ("sandbox-gpu-pool" in variant.components and workload == "sandbox")
            or deployment["kind"] == "JobSet"
        )
        if on_gpu:
            assert quantity(resources["limits"]["nvidia.com/gpu"]) >= 1, where
            assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"], where
        else:
            assert "nvidia.com/gpu" not in resources["limits"], where
        annotations = next(t for w, t in pod_templates(variant) if t["spec"] is pod)["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true", where
        assert annotations["prometheus.io/port"] == str(metrics_port), where
        assert annotations["prometheus.io/path"] == "/metrics", where


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_writable_paths_are_volumes(variants: dict[str, Variant], name: str) -> None:
    """The root filesystem is read-only: every directory a service writes must be a volume."""
    variant = variants[name]
    for deployment, pod, container in containers(variant):
        where = f"{name}: {deployment['metadata']['name']}/{container['name']}"
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        for volume in volumes.values():
            sources = set(volume) - {"name"}
            assert len(sources) == 1, f"{where}: volume {volume['name']} has sources {sources}"
        mounts = [PurePosixPath(mount["mountPath"]) for mount in container["volumeMounts"]]
        assert all(mount["name"] in volumes for mount in container["volumeMounts"]), where
        env = {item["name"]: item["value"] for item in container.get("env", []) if "value" in item}
        writable = ["/tmp", env.get("HOME", "/home/drkernel")]
        writable += [value for key, value in env.items() if key.endswith("_DIR")]
        for path in map(PurePosixPath, writable):
            assert any(path == mount or mount in path.parents for mount in mounts), (
                f"{where}: {path} is not on a volume"
            )


def serve_commands() -> set[str]:
    """The services `drkernel serve` knows today."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    serve = commands.choices["serve"]
    return set(next(a for a in serve._actions if isinstance(a, argparse._SubParsersAction)).choices)


@pytest.mark.parametrize("name", VARIANT_NAMES)
@pytest.mark.parametrize("service", SERVICES)
def test_container_agrees_with_cli_and_settings(
    variants: dict[str, Variant], name: str, service: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The args parse with the real CLI and name the probed ports; every DRKERNEL_ variable is a
    setting (a misspelt section would be ignored silently); the pod outlives the server's grace."""
    if service not in serve_commands():
        pytest.skip(f"`drkernel serve {service}` does not exist yet")
    if service == "trainer" and "trainer-job" in variants[name].components:
        pytest.skip("the trainer is a JobSet here (test_trainer_job_*)")
    deployment = variants[name].named("Deployment", service)
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = build_parser().parse_args(container["args"])
    assert args.command == "serve" and args.service == service
    assert (args.port, args.metrics_port) == (port(container, "grpc"), port(container, "metrics"))

    for key in [key for key in os.environ if key.startswith("DRKERNEL_")]:
        monkeypatch.delenv(key)
    env = {item["name"]: item["value"] for item in container.get("env", []) if item["name"].startswith("DRKERNEL_")}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = load_settings()
    for key, value in env.items():
        node: Any = settings
        for part in key.removeprefix("DRKERNEL_").lower().split("__"):
            assert hasattr(node, part), f"{name}: {key} names no setting ({part!r} is unknown)"
            node = getattr(node, part)
        assert node == type(node)(value), f"{name}: {key}={value} was read as {node!r}"
    grace = getattr(settings, service).server.grace_seconds
    if service == "trainer":  # after the calls, every run gets its own grace to checkpoint
        grace += settings.trainer.stop_grace_seconds
    assert pod["terminationGracePeriodSeconds"] > grace + 5, (
        f"{name}: {service} is killed before its {grace} s grace ends"
    )


def runs_mounts(pod: dict[str, Any]) -> set[tuple[str, str, bool]]:
    """(claim, mount path, read-only) of every persistent volume the pod's container mounts."""
    (container,) = pod["containers"]
    claims = {
        v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v
    }
    return {
        (claims[m["name"]], m["mountPath"], m.get("readOnly", False))
        for m in container["volumeMounts"]
        if m["name"] in claims
    }


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_policy_reads_the_trainers_runs_at_the_same_path(variants: dict[str, Variant], name: str) -> None:
    """Weight sync and checkpoints go by path: the policy mounts the trainer's runs volume,
    read-only, where the trainer writes its runs (runs_dir, or the training job's --out)."""
    variant = variants[name]
    policy = runs_mounts(variant.named("Deployment", "policy")["spec"]["template"]["spec"])
    if "trainer-job" in variant.components:
        (_, template), *_ = [(w, t) for w, t in pod_templates(variant) if w["kind"] == "JobSet"]
        container = template["spec"]["containers"][0]
        out = PurePosixPath(next(a for a in container["args"] if a.startswith("--out=")).removeprefix("--out="))
        runs_dir = str(out.parent)
        trainer = runs_mounts(template["spec"])
    else:
        pod = variant.named("Deployment", "trainer")["spec"]["template"]["spec"]
        runs_dir = {item["name"]: item["value"] for item in pod["containers"][0]["env"]}["DRKERNEL_TRAINER__RUNS_DIR"]
        trainer = runs_mounts(pod)
    assert ("trainer-runs", runs_dir, False) in trainer
    assert ("trainer-runs", runs_dir, True) in policy
    variant.named("PersistentVolumeClaim", "trainer-runs")


PINNED = re.compile(r"registry\.example\.com/(?P<name>[a-z-]+)@sha256:[0-9a-f]{64}")


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_image_matches_project_and_dockerfile(variants: dict[str, Variant], name: str) -> None:
    """The policy runs the policy image (with vLLM), every other service the drkernel image: by
    digest in the production overlays, by the project's version tag (-cuda with GPUs) elsewhere."""
    variant = variants[name]
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    dockerfile = (REPO / "deploy" / "docker" / "Dockerfile").read_text()
    uid, gid = map(int, re.search(r"^USER (\d+):(\d+)$", dockerfile, re.M).groups())
    assert re.search(r'^ENTRYPOINT \["drkernel"\]$', dockerfile, re.M)
    assert {"drkernel", "policy"} <= set(re.findall(r"^FROM \S+ AS (\S+)$", dockerfile, re.M))
    pinned = name in ("overlays/cpu", "overlays/gpu")
    for workload, pod, container in containers(variant):
        image = "drkernel-policy" if workload["metadata"]["name"] == "policy" else "drkernel"
        cuda = "gpu" in variant.components or (
            image == "drkernel" and variant.components & {"sandbox-gpu-pool", "trainer-job"}
        )
        if pinned:
            match = PINNED.fullmatch(container["image"])
            assert match and match["name"] == image, f"{name}: {workload['metadata']['name']}: {container['image']}"
        else:
            expected = f"{image}:{version}-cuda" if cuda else f"{image}:{version}"
            assert container["image"] == expected, f"{name}: {workload['metadata']['name']}"
        if pod["securityContext"]["runAsUser"] != 0:
            assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (uid, gid)


@pytest.mark.parametrize("name", [n for n in VARIANT_NAMES if "monitoring" in n or n.startswith("overlays/")])
def test_monitoring_configmaps_ship_every_dashboard_and_the_rules(variants: dict[str, Variant], name: str) -> None:
    variant = variants[name]
    dashboards = variant.named("ConfigMap", "drkernel-grafana-dashboards")
    assert dashboards["metadata"]["labels"]["grafana_dashboard"] == "1"
    committed = {path.name: path.read_text() for path in (MONITORING / "dashboards").glob("*.json")}
    assert committed and dashboards["data"] == committed
    rules = variant.named("ConfigMap", "drkernel-prometheus-rules")
    assert rules["data"] == {"drkernel.rules.yml": (MONITORING / "rules" / "drkernel.rules.yml").read_text()}


def test_dockerignore_keeps_what_the_image_installs() -> None:
    """The build context holds the package sources and the constraints the Dockerfile uses."""
    patterns = [line for line in (REPO / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert patterns[0] == "*"
    kept = {pattern.removeprefix("!").rstrip("/") for pattern in patterns if pattern.startswith("!")}
    assert {"pyproject.toml", "constraints", "drkernel", "services"} <= kept
    copied = re.findall(r"^COPY (?!--from)(\S+)", (REPO / "deploy" / "docker" / "Dockerfile").read_text(), re.M)
    assert copied and all(source == "." or Path(source).parts[0] in kept for source in copied)
