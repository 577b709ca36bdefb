"""deploy/monitoring: the scrape job keeps what it should (a real Prometheus), the alert rules
pass their unit tests, and the dashboards are current and query only metrics the code exports."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import prometheus_client
import pytest
import yaml

from .helpers import MONITORING, REPO, Variant

RULES = MONITORING / "rules" / "drkernel.rules.yml"
# Metrics Prometheus itself makes for every target.
PROMETHEUS_METRICS = {"up"}


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (Debian package prometheus; scripts/system-deps.sh installs it)")
    return path


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate", MONITORING / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def config_with_file_discovery(directory: Path, scrape_interval: str = "15s") -> Path:
    """prometheus.yml with its Kubernetes discovery swapped for a file of targets: Debian's
    Prometheus is built without Kubernetes discovery. Everything else is kept as committed."""
    config = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
    (job,) = config["scrape_configs"]
    assert job.pop("kubernetes_sd_configs") == [{"role": "pod"}]
    job["file_sd_configs"] = [{"files": [str(directory / "targets.json")]}]
    config["global"]["scrape_interval"] = scrape_interval
    config["rule_files"] = [str(MONITORING / path) for path in config["rule_files"]]
    path = directory / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_promtool_checks_config_and_rules(tmp_path: Path) -> None:
    promtool = tool("promtool")
    (tmp_path / "targets.json").write_text("[]")
    for args in (["check", "config", str(config_with_file_discovery(tmp_path))], ["check", "rules", str(RULES)]):
        result = subprocess.run([promtool, *args], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, f"promtool {' '.join(args)}:\n{result.stdout}{result.stderr}"


def test_alert_rules_pass_their_unit_tests() -> None:
    promtool = tool("promtool")
    tests = Path(__file__).with_name("alerts.test.yml")
    result = subprocess.run(
        [promtool, "test", "rules", tests.name], cwd=tests.parent, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    alerts = {rule["alert"] for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]}
    tested = {
        case["alertname"] for test in yaml.safe_load(tests.read_text())["tests"] for case in test["alert_rule_test"]
    }
    assert alerts == tested, f"alerts without a unit test: {alerts - tested}"


def meta_label(prefix: str, name: str) -> str:
    return prefix + re.sub(r"[^a-zA-Z0-9_]", "_", name)


def pod_targets(deployment: dict[str, Any], namespace: str, address: str) -> list[dict[str, Any]]:
    """The targets Kubernetes pod discovery yields for one pod of `deployment`: one per container
    port, with the pod's labels and annotations as meta labels."""
    template = deployment["spec"]["template"]
    common = {
        "__meta_kubernetes_namespace": namespace,
        "__meta_kubernetes_pod_name": f"{deployment['metadata']['name']}-7d9f8-abcde",
        **{meta_label("__meta_kubernetes_pod_label_", k): v for k, v in template["metadata"]["labels"].items()},
        **{
            meta_label("__meta_kubernetes_pod_annotation_", k): v
            for k, v in template["metadata"].get("annotations", {}).items()
        },
    }
    return [
        {
            "targets": [address],
            "labels": {
                **common,
                "__meta_kubernetes_pod_container_name": container["name"],
                "__meta_kubernetes_pod_container_port_name": port["name"],
                "__meta_kubernetes_pod_container_port_number": str(port["containerPort"]),
            },
        }
        for container in template["spec"]["containers"]
        for port in container["ports"]
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


@pytest.fixture
def exporter() -> Iterator[str]:
    """A real Prometheus exporter on loopback standing in for every pod's metrics port."""
    server, thread = prometheus_client.start_http_server(
        0, addr="127.0.0.1", registry=prometheus_client.CollectorRegistry()
    )
    yield f"127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(5)


@pytest.mark.slow  # Prometheus hands discovered targets to its scrapers every 5 s
def test_scrape_job_keeps_each_pods_metrics_port(variants: dict[str, Variant], exporter: str, tmp_path: Path) -> None:
    """A real Prometheus runs the committed relabelling on the targets Kubernetes would yield for
    the cpu-dev overlay, plus an annotated pod of another application."""
    prometheus = tool("prometheus")
    variant = variants["overlays/cpu-dev"]
    namespace = variant.of_kind("Namespace")[0]["metadata"]["name"]
    deployments = variant.of_kind("Deployment")
    stranger = {
        "metadata": {"name": "stranger"},
        "spec": {
            "template": {
                "metadata": {
                    "labels": {"app.kubernetes.io/name": "stranger"},
                    "annotations": {"prometheus.io/scrape": "true"},
                },
                "spec": {"containers": [{"name": "web", "ports": [{"name": "metrics", "containerPort": 8080}]}]},
            }
        },
    }
    groups = [
        group for deployment in [*deployments, stranger] for group in pod_targets(deployment, namespace, exporter)
    ]
    (tmp_path / "targets.json").write_text(json.dumps(groups))
    port = free_port()
    process = subprocess.Popen(
        [
            prometheus,
            f"--config.file={config_with_file_discovery(tmp_path, '1s')}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        api = f"http://127.0.0.1:{port}/api/v1"
        deadline = time.monotonic() + 30
        active: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            try:
                targets = get_json(f"{api}/targets")["data"]
                active = targets["activeTargets"]
                if active and all(target["health"] == "up" for target in active):
                    break
            except OSError:
                pass
            time.sleep(0.2)
        expected = {
            (deployment["metadata"]["name"], f"{deployment['metadata']['name']}-7d9f8-abcde")
            for deployment in deployments
        }
        assert {(t["labels"]["service"], t["labels"]["pod"]) for t in active} == expected
        for target in active:
            assert target["health"] == "up", target
            assert target["labels"]["job"] == "drkernel" and target["labels"]["namespace"] == namespace
            assert target["scrapeUrl"] == f"http://{exporter}/metrics"
        assert len(targets["droppedTargets"]) == sum(len(g["targets"]) for g in groups) - len(expected)
        rules = get_json(f"{api}/rules")["data"]["groups"]
        assert sum(len(group["rules"]) for group in rules) == len(
            [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]
        )
    finally:
        process.terminate()
        process.wait(30)


def test_generated_files_are_up_to_date() -> None:
    module = generator()
    rendered = module.render()
    dashboards = {Path("dashboards") / path.name for path in (MONITORING / "dashboards").glob("*.json")}
    assert set(rendered) == dashboards | {Path("prometheus-operator") / "prometheusrule.yaml"}
    assert module.stale_files(rendered) == [], "run python deploy/monitoring/generate.py and commit its output"


def test_stale_files_names_a_changed_rule(tmp_path: Path) -> None:
    module = generator()
    rendered = module.render()
    for path, text in rendered.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    assert module.stale_files(rendered, tmp_path) == []
    rule = tmp_path / "prometheus-operator" / "prometheusrule.yaml"
    rule.write_text(rule.read_text().replace("for: 5m", "for: 6m", 1))
    assert module.stale_files(rendered, tmp_path) == [Path("prometheus-operator") / "prometheusrule.yaml"]


def test_prometheus_operator_objects_carry_the_rules_and_the_scrape_job() -> None:
    """The PrometheusRule holds exactly the rule file's groups; the PodMonitor keeps the pods and
    labels the plain scrape job keeps (job, service; namespace and pod come from the operator)."""
    rule = yaml.safe_load((MONITORING / "prometheus-operator" / "prometheusrule.yaml").read_text())
    assert rule["spec"] == yaml.safe_load(RULES.read_text())
    monitor = yaml.safe_load((MONITORING / "prometheus-operator" / "podmonitor.yaml").read_text())
    (job,) = yaml.safe_load((MONITORING / "prometheus.yml").read_text())["scrape_configs"]
    keep = {tuple(r["source_labels"]): r["regex"] for r in job["relabel_configs"] if r.get("action") == "keep"}
    assert monitor["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/part-of": keep[("__meta_kubernetes_pod_label_app_kubernetes_io_part_of",)]
    }
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == keep[("__meta_kubernetes_pod_container_port_name",)]
    targets = {r["targetLabel"]: r.get("replacement") or r["sourceLabels"] for r in endpoint["relabelings"]}
    assert targets["job"] == job["job_name"]
    assert targets["service"] == ["__meta_kubernetes_pod_label_app_kubernetes_io_name"]


def dashboard_queries() -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target and query variable of the committed dashboards."""
    found = []
    for path in sorted((MONITORING / "dashboards").glob("*.json")):
        board = json.loads(path.read_text())
        for panel in board["panels"]:
            found += [(f"{path.name}: {panel['title']}", target["expr"]) for target in panel.get("targets", [])]
        for variable in board["templating"]["list"]:
            if variable["type"] == "query":
                inner = re.fullmatch(r"label_values\((.*),\s*\w+\)", variable["query"])
                assert inner, f"{path.name}: variable {variable['name']} is not a label_values() query"
                found.append((f"{path.name}: variable {variable['name']}", inner.group(1)))
    assert found
    return found


def alert_queries() -> list[tuple[str, str]]:
    return [
        (f"alert {rule['alert']}", rule["expr"])
        for group in yaml.safe_load(RULES.read_text())["groups"]
        for rule in group["rules"]
    ]


def grafana_to_promql(expr: str) -> str:
    """Replaces Grafana's variables with values PromQL accepts."""
    return (
        expr.replace("$__rate_interval", "5m")
        .replace("$job", "drkernel")
        .replace("$namespace", "drkernel")
        .replace("$pod", ".*")
    )


def test_dashboard_queries_parse(tmp_path: Path) -> None:
    """Every dashboard query is valid PromQL (promtool parses them as recording rules)."""
    promtool = tool("promtool")
    rules = [
        {"record": f"drkernel:dashboard_query_{i}", "expr": grafana_to_promql(expr)}
        for i, (_, expr) in enumerate(dashboard_queries())
    ]
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


_KINDS = {"Counter", "Gauge", "Histogram", "Summary", "Info", "Enum"}
_SUFFIXES = {
    "Counter": ("_total", "_created"),
    "Gauge": ("",),
    "Histogram": ("_bucket", "_sum", "_count", "_created"),
    "Summary": ("", "_sum", "_count", "_created"),
    "Info": ("_info",),
    "Enum": ("",),
}


def exported_metrics() -> set[str]:
    """The series names the code exposes, read from its prometheus_client metric definitions."""
    names: set[str] = set()
    for path in [*(REPO / "drkernel").rglob("*.py"), *(REPO / "services").rglob("*.py")]:
        source = path.read_text()
        if "prometheus_client" not in source:  # also skips the deliberately broken task examples
            continue
        for node in ast.walk(ast.parse(source, str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _KINDS):
                continue
            if not (isinstance(node.func.value, ast.Name) and node.func.value.id == "prometheus_client"):
                continue
            assert node.args and isinstance(node.args[0], ast.Constant), (
                f"{path}:{node.lineno}: metric name is not a literal"
            )
            name = node.args[0].value.removesuffix("_total") if node.func.attr == "Counter" else node.args[0].value
            names.update(name + suffix for suffix in _SUFFIXES[node.func.attr])
    return names


_STRINGS = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_GROUPINGS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z_:][\w:]*")
_KEYWORDS = {
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "inf",
    "nan",
}


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression: identifiers that are neither functions, keywords,
    label names in matchers or groupings, nor durations."""
    text = _GROUPINGS.sub("", _RANGES.sub("", _MATCHERS.sub("", _STRINGS.sub('""', expr))))
    return {
        match.group()
        for match in _IDENTIFIER.finditer(text)
        if match.group().lower() not in _KEYWORDS and not text[match.end() :].lstrip().startswith("(")
    }


def test_metric_name_reader() -> None:
    expr = (
        'histogram_quantile(0.9, sum by (pod, le) (rate(a_bucket{x="b c", le=~"1"}[5m]))) '
        "/ on (pod) group_left b_total > 1e3 and c"
    )
    assert metric_names(expr) == {"a_bucket", "b_total", "c"}
    assert {
        "drkernel_rpc_total",
        "drkernel_rpc_duration_seconds_bucket",
        "drkernel_sandbox_reward_sum",
    } <= exported_metrics()


def adapter_queries() -> list[tuple[str, str]]:
    """The prometheus-adapter rule's queries, its template variables filled as the adapter does."""
    rules = yaml.safe_load((MONITORING / "prometheus-adapter.yaml").read_text())["rules"]
    fill = {"<<.GroupBy>>": "namespace, pod", "<<.LabelMatchers>>": 'namespace="drkernel"'}
    found = []
    for rule in rules:
        for key in ("seriesQuery", "metricsQuery"):
            expr = rule[key]
            for variable, value in fill.items():
                expr = expr.replace(variable, value)
            found.append((f"adapter {rule['name']['as']} {key}", expr))
    return found


def test_adapter_queries_parse(tmp_path: Path) -> None:
    promtool = tool("promtool")
    path = tmp_path / "adapter.yml"
    rules = [{"record": f"drkernel:adapter_{i}", "expr": expr} for i, (_, expr) in enumerate(adapter_queries())]
    path.write_text(yaml.safe_dump({"groups": [{"name": "adapter", "rules": rules}]}))
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("source", ["dashboards", "alerts", "adapter"])
def test_queries_use_only_exported_metrics(source: str) -> None:
    exported = exported_metrics() | PROMETHEUS_METRICS
    queries = {"dashboards": dashboard_queries, "alerts": alert_queries, "adapter": adapter_queries}[source]()
    unknown = {(where, name) for where, expr in queries for name in metric_names(expr) if name not in exported}
    assert not unknown, f"queried but not exported by drkernel/ or services/: {sorted(unknown)}"
