"""deploy/k8s's production pieces: who may reach whom (the NetworkPolicies, evaluated), the GPU
sandbox pool's isolation, mutual TLS and the token, the autoscaler and its metric, disruption
budgets, the training JobSet's command line against torchrun and the CLI, and image pinning."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from services.trainer.run_config import parse_run_config

from .helpers import K8S, MONITORING, REPO, VARIANT_NAMES, Variant, render

SERVICES = ("sandbox", "profiler", "policy", "trainer")
OUTSIDER = {"app.kubernetes.io/name": "stranger"}


def pods(variant: Variant) -> dict[str, tuple[dict[str, str], dict[str, Any]]]:
    """Labels and pod spec of every workload's pods, by workload name."""
    found = {
        d["metadata"]["name"]: (d["spec"]["template"]["metadata"]["labels"], d["spec"]["template"]["spec"])
        for d in variant.of_kind("Deployment")
    }
    for jobset in variant.of_kind("JobSet"):
        template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
        found[jobset["metadata"]["name"]] = (template["metadata"]["labels"], template["spec"])
    return found


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a label selector (matchLabels, matchExpressions with In/Exists) selects ``labels``."""
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator = expression["key"], expression["operator"]
        if operator == "In" and labels.get(key) not in expression["values"]:
            return False
        if operator == "Exists" and key not in labels:
            return False
        assert operator in ("In", "Exists"), f"operator {operator} is not evaluated here"
    return True


def _port_allowed(rule: dict[str, Any], port: int, named: dict[str, int]) -> bool:
    if "ports" not in rule:
        return True
    return any(named.get(p["port"], p["port"]) == port and p.get("protocol", "TCP") == "TCP" for p in rule["ports"])


def _peer_matches(peer: dict[str, Any], labels: dict[str, str], same_namespace: bool) -> bool:
    if "namespaceSelector" in peer:  # these manifests use it only for other namespaces' pods
        return _selects(peer.get("podSelector", {}), labels)
    return same_namespace and _selects(peer["podSelector"], labels)


def allowed(
    variant: Variant,
    source: dict[str, str],
    target: dict[str, str],
    port: int,
    *,
    same_namespace: bool = True,
    target_elsewhere: bool = False,
) -> bool:
    """Whether the variant's NetworkPolicies let a pod labelled ``source`` open a TCP connection
    to ``port`` of a pod labelled ``target`` (policies add up; a pod no policy selects for a
    direction is open in it). A ``source`` in another namespace (``same_namespace`` false) has
    no egress policies here; a target elsewhere (``target_elsewhere``) no ingress policies."""
    policies = variant.of_kind("NetworkPolicy")
    named: dict[str, int] = {}
    for labels, spec in pods(variant).values():
        if labels.items() >= target.items():
            named = {p["name"]: p["containerPort"] for c in spec["containers"] for p in c.get("ports", [])}
    if same_namespace:
        egress = [
            p for p in policies if "Egress" in p["spec"]["policyTypes"] and _selects(p["spec"]["podSelector"], source)
        ]
        if egress and not any(
            _port_allowed(rule, port, named) and any(_peer_matches(peer, target, True) for peer in rule.get("to", []))
            for policy in egress
            for rule in policy["spec"].get("egress", [])
        ):
            return False
    if target_elsewhere:
        return True
    ingress = [
        p for p in policies if "Ingress" in p["spec"]["policyTypes"] and _selects(p["spec"]["podSelector"], target)
    ]
    return not ingress or any(
        _port_allowed(rule, port, named)
        and any(_peer_matches(peer, source, same_namespace) for peer in rule.get("from", []))
        for policy in ingress
        for rule in policy["spec"].get("ingress", [])
    )


def name(service: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": service, "app.kubernetes.io/part-of": "drkernel"}


KUBE_DNS = {"k8s-app": "kube-dns"}


@pytest.mark.parametrize("variant_name", [n for n in VARIANT_NAMES if n.startswith("overlays/")] + ["base"])
def test_network_policies_allow_exactly_the_calls_drkernel_makes(
    variants: dict[str, Variant], variant_name: str
) -> None:
    variant = variants[variant_name]
    bench = {"app.kubernetes.io/name": "bench"}
    # The sandbox takes calls from the trainer, the profiler and bench clients only.
    for caller in ("trainer", "profiler"):
        assert allowed(variant, name(caller), name("sandbox"), 50051), caller
    assert allowed(variant, bench, name("sandbox"), 50051)
    for stranger in (name("policy"), OUTSIDER):
        assert not allowed(variant, stranger, name("sandbox"), 50051), stranger
    assert not allowed(variant, name("trainer"), name("sandbox"), 22), "only the gRPC port"
    assert not allowed(variant, name("trainer"), name("sandbox"), 50051, same_namespace=False)
    # The sandbox and the policy dial nobody, not even DNS.
    for quiet in ("sandbox", "policy"):
        for target, port in ((name("trainer"), 50054), (name("policy"), 50053)):
            assert not allowed(variant, name(quiet), target, port), (quiet, target)
        for target, port in ((KUBE_DNS, 53), (OUTSIDER, 443)):
            assert not allowed(variant, name(quiet), target, port, target_elsewhere=True), (quiet, target)
    # The callers reach what they call, and DNS; the trainer's nodes reach each other.
    assert allowed(variant, name("trainer"), name("policy"), 50053)
    assert allowed(variant, name("trainer"), name("trainer"), 29500)
    assert not allowed(variant, name("profiler"), name("policy"), 50053)
    for caller in ("trainer", "profiler"):
        assert allowed(variant, name(caller), KUBE_DNS, 53, target_elsewhere=True), caller
        assert not allowed(variant, name(caller), OUTSIDER, 443, target_elsewhere=True), caller
    # Prometheus scrapes metrics ports from its own namespace, and only those.
    prometheus = {"app.kubernetes.io/name": "prometheus"}
    assert allowed(variant, prometheus, name("sandbox"), 9101, same_namespace=False)
    assert not allowed(variant, prometheus, name("sandbox"), 50051, same_namespace=False)
    # The plaintext health ports (auth) are for the kubelet's probes, which no policy filters:
    # no pod reaches them.
    for workload, (labels, spec) in pods(variant).items():
        ports = {p["name"]: p["containerPort"] for c in spec["containers"] for p in c.get("ports", [])}
        if "health" not in ports:
            continue
        for caller in ("trainer", "profiler", "sandbox", "policy"):
            if not workload == caller == "trainer":  # the trainer's pods reach each other on every port
                assert not allowed(variant, name(caller), labels, ports["health"]), (caller, workload)
        for stranger in (bench, OUTSIDER, prometheus):
            for same_namespace in (True, False):
                assert not allowed(variant, stranger, labels, ports["health"], same_namespace=same_namespace), (
                    stranger,
                    workload,
                )


def test_network_policy_evaluator_opens_what_no_policy_selects(variants: dict[str, Variant]) -> None:
    """Without the default deny every pod is reachable: the evaluator is not a constant."""
    variant = variants["overlays/cpu-dev"]
    open_variant = Variant(
        variant.name, variant.components, tuple(d for d in variant.docs if d["kind"] != "NetworkPolicy")
    )
    assert allowed(open_variant, OUTSIDER, name("sandbox"), 50051)
    assert not allowed(variant, OUTSIDER, name("sandbox"), 50051)


@pytest.mark.parametrize("variant_name", VARIANT_NAMES)
def test_no_gpu_pod_uses_a_pod_user_namespace(variants: dict[str, Variant], variant_name: str) -> None:
    """NVIDIA's GPU Operator does not support hostUsers: false."""
    for workload, (_, spec) in pods(variants[variant_name]).items():
        gpus = [c for c in spec["containers"] if "nvidia.com/gpu" in c["resources"].get("limits", {})]
        assert not (gpus and spec.get("hostUsers") is False), (
            f"{variant_name}: {workload} asks for a GPU in a user namespace"
        )


def test_gpu_sandbox_pool_is_dedicated_rooted_and_without_surge(variants: dict[str, Variant]) -> None:
    sandbox = variants["overlays/gpu"].named("Deployment", "sandbox")
    spec = sandbox["spec"]["template"]["spec"]
    assert spec["nodeSelector"]["drkernel.dev/pool"] == "sandbox"
    assert {"key": "drkernel.dev/pool", "operator": "Equal", "value": "sandbox", "effect": "NoSchedule"} in spec[
        "tolerations"
    ]
    assert spec["hostUsers"] is True and spec["securityContext"]["runAsUser"] == 0
    assert sandbox["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}
    cpu = variants["overlays/cpu"].named("Deployment", "sandbox")["spec"]["template"]["spec"]
    assert cpu["nodeSelector"] == {"drkernel.dev/pool": "sandbox"} and cpu["hostUsers"] is False


AUTH_FILES = {
    "DRKERNEL_SECURITY__TLS_CA_FILE": "ca.crt",
    "DRKERNEL_SECURITY__CLIENT_CERT_FILE": "tls.crt",
    "DRKERNEL_SECURITY__CLIENT_KEY_FILE": "tls.key",
    "DRKERNEL_SECURITY__TOKEN_FILE": "token",
}
SERVER_FILES = {"DRKERNEL_SECURITY__TLS_CERT_FILE": "tls.crt", "DRKERNEL_SECURITY__TLS_KEY_FILE": "tls.key"}


@pytest.mark.parametrize("variant_name", [n for n in VARIANT_NAMES if n.startswith("overlays/")] + ["base+all"])
def test_every_call_is_authenticated_except_in_the_dev_overlay(variants: dict[str, Variant], variant_name: str) -> None:
    """Each security file a container is told about is a key of the Secret mounted there; the
    servers require client certificates; only cpu-dev runs without."""
    variant = variants[variant_name]
    certificates = {c["spec"]["secretName"]: c for c in variant.of_kind("Certificate")}
    for workload, (_, spec) in pods(variant).items():
        (container,) = spec["containers"]
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        security = {k: v for k, v in env.items() if k.startswith("DRKERNEL_SECURITY__")}
        if variant_name == "overlays/cpu-dev":
            assert not security, f"{workload}: security is off in the dev overlay"
            continue
        expected = AUTH_FILES | (
            SERVER_FILES if workload != "trainer" or "trainer-job" not in variant.components else {}
        )
        assert expected.keys() <= security.keys(), f"{workload}: {sorted(expected.keys() - security.keys())} missing"
        if "DRKERNEL_SECURITY__TLS_CERT_FILE" in security:
            assert security["DRKERNEL_SECURITY__REQUIRE_CLIENT_CERT"] == "true", workload
        volumes = {v["name"]: v for v in spec["volumes"]}
        for key, file in expected.items():
            path = PurePosixPath(security[key])
            assert path.name == file, (workload, key)
            (mount,) = [m for m in container["volumeMounts"] if PurePosixPath(m["mountPath"]) == path.parent]
            secret = volumes[mount["name"]]["secret"]
            assert mount["readOnly"] is True
            if file == "token":
                assert secret["secretName"] == "drkernel-auth" and secret["items"] == [
                    {"key": "token", "path": "token"}
                ]
            else:
                assert secret["secretName"] == f"{workload}-tls", workload
                if certificates:
                    assert secret["secretName"] in certificates, f"no Certificate makes {secret['secretName']}"


def test_certificates_name_what_clients_dial(variants: dict[str, Variant]) -> None:
    """A client checks the server's certificate against the host it dials: every address the
    manifests give a client is a name in the server's certificate."""
    variant = variants["overlays/gpu"]
    names = {
        c["metadata"]["name"]: set(c["spec"]["dnsNames"])
        for c in variant.of_kind("Certificate")
        if "dnsNames" in c["spec"]
    }
    profiler = variant.named("Deployment", "profiler")["spec"]["template"]["spec"]["containers"][0]
    dialled = [("sandbox", {e["name"]: e["value"] for e in profiler["env"]}["DRKERNEL_PROFILER__SANDBOX_ADDRESS"])]
    run = parse_run_config(variant.named("ConfigMap", "trainer-run-config")["data"]["config.yaml"])
    dialled += [("sandbox", run.services.sandbox), ("policy", run.services.policy)]
    for service, address in dialled:
        assert address is not None
        host = re.fullmatch(r"(?:dns:///)?([a-z0-9.-]+):\d+", address)
        assert host, address
        assert host.group(1) in names[service], f"{address} is not a name of the {service} certificate"
        assert {s["metadata"]["name"] for s in variant.of_kind("Service")} >= {host.group(1)}
    cert = variant.named("Certificate", "sandbox")["spec"]
    assert set(cert["usages"]) == {"server auth", "client auth"}
    assert (
        cert["issuerRef"]["name"] == "drkernel-ca"
        and variant.named("Issuer", "drkernel-ca")["spec"]["ca"]["secretName"] == "drkernel-ca"
    )


def test_headless_services_select_the_replicas(variants: dict[str, Variant]) -> None:
    variant = variants["overlays/gpu"]
    for service, port in (("sandbox", 50051), ("policy", 50053)):
        headless = variant.named("Service", f"{service}-headless")["spec"]
        assert headless["clusterIP"] == "None" and headless["ports"][0]["port"] == port
        labels, _ = pods(variant)[service]
        assert headless["selector"].items() <= labels.items()


def adapter_rule() -> dict[str, Any]:
    (rule,) = yaml.safe_load((MONITORING / "prometheus-adapter.yaml").read_text())["rules"]
    return rule


def test_autoscaler_scales_the_sandbox_on_the_adapters_metric(variants: dict[str, Variant]) -> None:
    variant = variants["overlays/gpu"]
    (hpa,) = variant.of_kind("HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "sandbox"}
    assert "replicas" not in variant.named("Deployment", "sandbox")["spec"], "the autoscaler owns the count"
    (metric,) = hpa["spec"]["metrics"]
    assert metric["pods"]["metric"]["name"] == adapter_rule()["name"]["as"]
    assert 2 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    # Pods scale, but never below what the disruption budget lets a drain take.
    budgets = {b["metadata"]["name"]: b["spec"] for b in variant.of_kind("PodDisruptionBudget")}
    assert budgets["sandbox"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": {"app.kubernetes.io/name": "sandbox"}},
    }
    assert budgets["policy"]["minAvailable"] == 1 and budgets["trainer"]["maxUnavailable"] == 0


def adapter_query() -> str:
    """The adapter's metrics query as prometheus-adapter expands it for one namespace's pods."""
    return (
        adapter_rule()["metricsQuery"]
        .replace("<<.GroupBy>>", "pod")
        .replace("<<.LabelMatchers>>", 'namespace="drkernel", pod=~"sandbox-a|sandbox-b"')
    )


def test_adapter_metric_is_the_busiest_device_kinds_load(tmp_path: Path) -> None:
    """promtool evaluates the expanded query on series like the sandbox's: (busy + waiting) /
    slots of the busiest device kind, per pod."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package prometheus; scripts/system-deps.sh installs it)")
    series = []
    for pod, device, busy, queued, workers in (
        ("sandbox-a", "cuda", 1, 3, 2),
        ("sandbox-a", "cpu", 1, 0, 4),
        ("sandbox-b", "cuda", 0, 0, 2),
    ):
        labels = f'job="drkernel", namespace="drkernel", pod="{pod}", service="sandbox", device="{device}"'
        series += [
            {"series": f"drkernel_sandbox_busy_workers{{{labels}}}", "values": f"{busy}x5"},
            {"series": f"drkernel_sandbox_queue_length{{{labels}}}", "values": f"{queued}x5"},
            {"series": f"drkernel_sandbox_workers{{{labels}}}", "values": f"{workers}x5"},
        ]
    rules = tmp_path / "adapter.rules.yml"
    rules.write_text(
        yaml.safe_dump({"groups": [{"name": "adapter", "rules": [{"record": "load", "expr": adapter_query()}]}]})
    )
    tests = tmp_path / "adapter.test.yml"
    expected = [{"labels": 'load{pod="sandbox-a"}', "value": 2}, {"labels": 'load{pod="sandbox-b"}', "value": 0}]
    tests.write_text(
        yaml.safe_dump(
            {
                "rule_files": [rules.name],
                "evaluation_interval": "1m",
                "tests": [
                    {
                        "interval": "1m",
                        "input_series": series,
                        "promql_expr_test": [{"expr": "load", "eval_time": "2m", "exp_samples": expected}],
                    }
                ],
            }
        )
    )
    result = subprocess.run(
        [promtool, "test", "rules", tests.name], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def jobset(variant: Variant) -> dict[str, Any]:
    (found,) = variant.of_kind("JobSet")
    return found


def test_trainer_job_runs_torchrun_over_every_node_and_gpu(variants: dict[str, Variant]) -> None:
    """The torchrun command line parses with torchrun's own parser once the kubelet has put in
    the node rank, and agrees with the Job: nodes = pods, processes = GPUs per pod, node rank =
    completion index, master = the first pod's stable hostname."""
    torch_run = pytest.importorskip("torch.distributed.run")
    job = jobset(variants["overlays/gpu"])
    (replicated,) = job["spec"]["replicatedJobs"]
    spec = replicated["template"]["spec"]
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert (
        env["NODE_RANK"]["valueFrom"]["fieldRef"]["fieldPath"]
        == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    )
    args = [a.replace("$(NODE_RANK)", "1") for a in container["args"]]
    assert container["command"] == ["torchrun"]
    parsed = torch_run.get_args_parser().parse_args(args)
    assert parsed.nnodes == str(spec["parallelism"]) == str(spec["completions"])
    assert int(parsed.nproc_per_node) == int(container["resources"]["limits"]["nvidia.com/gpu"])
    assert parsed.node_rank == 1 and spec["completionMode"] == "Indexed"
    assert job["spec"]["network"]["enableDNSHostnames"] is True
    subdomain = job["spec"]["network"].get("subdomain", job["metadata"]["name"])
    assert parsed.master_addr == f"{job['metadata']['name']}-{replicated['name']}-0-0.{subdomain}"
    assert parsed.master_port == port_of(container, "rendezvous")
    assert parsed.module and parsed.training_script == "drkernel"
    # Restarts: every failure restarts the whole set, pods are never restarted alone.
    assert pod["restartPolicy"] == "Never" and spec["backoffLimit"] == 0
    assert job["spec"]["failurePolicy"]["maxRestarts"] > 0


def port_of(container: dict[str, Any], port_name: str) -> int:
    (number,) = [p["containerPort"] for p in container["ports"] if p["name"] == port_name]
    return int(number)


def test_trainer_job_trains_the_mounted_run_config_into_the_shared_volume(variants: dict[str, Variant]) -> None:
    """The drkernel part of the command parses with the real CLI; the config it names is the
    ConfigMap's (a valid run config), its run directory lies on the ReadWriteMany runs volume,
    and the pod outlives the stop grace its runs get."""
    from drkernel.cli import build_parser

    variant = variants["overlays/gpu"]
    pod = jobset(variant)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    train = container["args"][container["args"].index("drkernel") + 1 :]
    args = build_parser().parse_args(train)
    assert args.command == "train" and args.auto_resume, "a restarted job must resume, or start fresh, by itself"
    mounts = {m["name"]: PurePosixPath(m["mountPath"]) for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    config = PurePosixPath(str(args.run_config))
    (config_volume,) = [n for n, path in mounts.items() if path == config.parent]
    config_map = variant.named("ConfigMap", volumes[config_volume]["configMap"]["name"])
    parse_run_config(config_map["data"][config.name])
    (runs_volume,) = [n for n, path in mounts.items() if path in PurePosixPath(str(args.out)).parents]
    claim = variant.named("PersistentVolumeClaim", volumes[runs_volume]["persistentVolumeClaim"]["claimName"])
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert args.metrics_port == port_of(container, "metrics")
    stop_grace = float({e["name"]: e.get("value") for e in container["env"]}["DRKERNEL_TRAINER__STOP_GRACE_SECONDS"])
    assert pod["terminationGracePeriodSeconds"] > stop_grace + 30


def pin_module() -> Any:
    spec = importlib.util.spec_from_file_location("pin_images", REPO / "deploy" / "docker" / "pin_images.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DIGEST = "sha256:" + "ab" * 32


def test_pinned_overlay_pulls_the_pushed_digest(tmp_path: Path) -> None:
    """What build-images.sh writes into an overlay is what the rendered manifests pull, and
    nothing else in the file changes."""
    pin = pin_module()
    tree = tmp_path / "deploy"
    shutil.copytree(K8S, tree / "k8s")
    shutil.copytree(MONITORING, tree / "monitoring", ignore=shutil.ignore_patterns("__pycache__"))
    kustomization = tree / "k8s" / "overlays" / "gpu" / "kustomization.yaml"
    before = kustomization.read_text()
    assert before.count(pin.PLACEHOLDER) == 2, "the committed overlay holds the documented placeholders"
    after = pin.pin(before, "drkernel-policy", f"reg.test/team/drkernel-policy@{DIGEST}")
    kustomization.write_text(after)
    changed = [line for line in after.splitlines() if line not in before.splitlines()]
    assert changed == ["    newName: reg.test/team/drkernel-policy", f"    digest: {DIGEST}"]
    images = {
        c["metadata"]["name"]: c["spec"]["template"]["spec"]["containers"][0]["image"]
        for c in render(kustomization.parent)
        if c["kind"] == "Deployment"
    }
    assert images["policy"] == f"reg.test/team/drkernel-policy@{DIGEST}"
    assert images["sandbox"].startswith("registry.example.com/drkernel@" + pin.PLACEHOLDER)


@pytest.mark.parametrize(
    ("image", "reference", "message"),
    [
        ("drkernel", "reg.test/drkernel:0.1.0", "not an image reference pinned by digest"),
        ("drkernel", "reg.test/drkernel@sha256:abc", "not an image reference pinned by digest"),
        ("sandbox", f"reg.test/sandbox@{DIGEST}", "no entry for sandbox"),
    ],
)
def test_pinning_refuses_what_it_cannot_pin(image: str, reference: str, message: str) -> None:
    pin = pin_module()
    with pytest.raises(pin.PinError, match=message):
        pin.pin((K8S / "overlays" / "gpu" / "kustomization.yaml").read_text(), image, reference)


def test_build_script_builds_the_dockerfiles_targets() -> None:
    script = (REPO / "deploy" / "docker" / "build-images.sh").read_text()
    dockerfile = (REPO / "deploy" / "docker" / "Dockerfile").read_text()
    stages = set(re.findall(r"^FROM \S+ AS (\S+)$", dockerfile, re.M))
    built = dict(re.findall(r"^build (\S+) (\S+)", script, re.M))
    assert built == {"drkernel": "drkernel", "policy": "drkernel-policy"}
    assert set(built) <= stages
    build_args = set(re.findall(r"--build-arg (\w+)=", script))
    assert build_args <= set(re.findall(r"^ARG (\w+)", dockerfile, re.M))
