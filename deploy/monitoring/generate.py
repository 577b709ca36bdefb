"""Generates drkernel's monitoring files: the Grafana dashboards (dashboards/*.json, with
Grafana's Foundation SDK) and the Prometheus Operator's PrometheusRule
(prometheus-operator/prometheusrule.yaml, the alert rules of rules/drkernel.rules.yml wrapped in
the custom resource, so that the rules have one source).

Run `python deploy/monitoring/generate.py` after changing a panel or a rule and commit the
output; `--check` exits 1 when the committed files differ (tests/deploy runs the same
comparison). Queries rely on the labels that prometheus.yml's scrape job (or the PodMonitor)
gives every series: job, namespace, pod and service. The dashboards pick the job with a
variable (default "drkernel"), for Prometheus setups that name the job otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableOption, VariableRefresh, VariableSort

MONITORING = Path(__file__).resolve().parent
RULES = Path("rules") / "drkernel.rules.yml"
PROMETHEUS_RULE = Path("prometheus-operator") / "prometheusrule.yaml"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
# Status codes that mean the server failed (the same set as the DrKernelRPCErrorRatioHigh alert).
SERVER_ERROR_CODES = "INTERNAL|UNKNOWN|UNAVAILABLE|DEADLINE_EXCEEDED|DATA_LOSS|UNIMPLEMENTED"
TAGS = ["drkernel"]


def selector(service: str | None = None, **matchers: str) -> str:
    """The label matchers every query starts from: the chosen job, namespace and pods."""
    parts = ['job=~"$job"', 'namespace=~"$namespace"']
    if service is not None:
        parts += [f'service="{service}"', 'pod=~"$pod"']
    parts += [f'{name}="{value}"' for name, value in matchers.items()]
    return "{" + ", ".join(parts) + "}"


def query(expr: str, legend: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend).datasource(DATASOURCE)


def quantiles(
    metric: str, sel: str, by: str, levels: tuple[float, ...] = (0.5, 0.9, 0.99)
) -> list[prometheus.Dataquery]:
    """histogram_quantile queries of a histogram, one per level, grouped by the labels in `by`."""
    group = f"{by}, le" if by else "le"
    legend_by = " ".join(f"{{{{{label.strip()}}}}}" for label in by.split(",") if label.strip())
    return [
        query(
            f"histogram_quantile({level}, sum by ({group}) (rate({metric}_bucket{sel}[$__rate_interval])))",
            f"p{round(level * 100)} {legend_by}".strip(),
        )
        for level in levels
    ]


def graph(
    title: str,
    description: str,
    unit: str,
    targets: list[prometheus.Dataquery],
    *,
    width: int = 12,
    stacked: bool = False,
) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .unit(unit)
        .span(width)
        .height(8)
        .datasource(DATASOURCE)
        .fill_opacity(10)
        .legend(
            common_builders.VizLegendOptions()
            .display_mode(common.LegendDisplayMode.LIST)
            .placement(common.LegendPlacement.BOTTOM)
            .show_legend(True)
        )
    )
    if stacked:
        panel = panel.stacking(common_builders.StackingConfig().mode(common.StackingMode.NORMAL))
    for target in targets:
        panel = panel.with_target(target)
    return panel


def number(title: str, description: str, unit: str, target: prometheus.Dataquery, *, width: int = 6) -> stat.Panel:
    return (
        stat.Panel()
        .title(title)
        .description(description)
        .unit(unit)
        .span(width)
        .height(4)
        .datasource(DATASOURCE)
        .graph_mode(common.BigValueGraphMode.AREA)
        .with_target(target)
    )


def base_dashboard(uid: str, title: str, description: str, service: str | None) -> dash.Dashboard:
    """A dashboard with the datasource and namespace pickers, and a pod picker for one service."""
    board = (
        dash.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(TAGS)
        .refresh("30s")
        .time("now-3h", "now")
        .timezone("browser")
        .editable()
        .with_variable(dash.DatasourceVariable("datasource").label("Data source").type("prometheus"))
        .with_variable(
            dash.QueryVariable("job")
            .label("Job")
            .description(
                "The scrape job of drkernel's pods (drkernel with deploy/monitoring's scrape job or PodMonitor)."
            )
            .datasource(DATASOURCE)
            .query("label_values(drkernel_rpc_total, job)")
            .current(VariableOption(selected=True, text="drkernel", value="drkernel"))
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.ALPHABETICAL_ASC)
        )
        .with_variable(
            dash.QueryVariable("namespace")
            .label("Namespace")
            .datasource(DATASOURCE)
            .query('label_values(up{job=~"$job"}, namespace)')
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.ALPHABETICAL_ASC)
        )
    )
    if service is not None:
        board = board.with_variable(
            dash.QueryVariable("pod")
            .label("Pod")
            .datasource(DATASOURCE)
            .query(f'label_values(up{{job=~"$job", namespace=~"$namespace", service="{service}"}}, pod)')
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.ALPHABETICAL_ASC)
            .multi(True)
            .include_all(True)
            .all_value(".*")
        )
    return board


def rpc_panels(board: dash.Dashboard, service: str | None) -> dash.Dashboard:
    """Calls by status code, server-error ratio and latency (drkernel.serving's metrics)."""
    sel = selector(service)
    errors = selector(service).replace("}", f', code=~"{SERVER_ERROR_CODES}"}}')
    by = "service, method" if service is None else "method"
    return (
        board.with_row(dash.Row("RPCs"))
        .with_panel(
            graph(
                "Calls by status code",
                "Finished RPCs per second by gRPC status code.",
                "reqps",
                [
                    query(
                        f"sum by ({'service, ' if service is None else ''}code) "
                        f"(rate(drkernel_rpc_total{sel}[$__rate_interval]))",
                        "{{service}} {{code}}" if service is None else "{{code}}",
                    )
                ],
                stacked=True,
            )
        )
        .with_panel(
            graph(
                "Server-error ratio",
                f"Share of calls that ended in {SERVER_ERROR_CODES.replace('|', ', ')}; the alert fires above 5%.",
                "percentunit",
                [
                    query(
                        f"sum by ({by}) (rate(drkernel_rpc_total{errors}[$__rate_interval])) "
                        f"/ sum by ({by}) (rate(drkernel_rpc_total{sel}[$__rate_interval]))",
                        "{{service}} {{method}}" if service is None else "{{method}}",
                    )
                ],
            )
        )
        .with_panel(
            graph(
                "Call latency",
                "RPC latency percentiles by method, from start to last message.",
                "s",
                quantiles("drkernel_rpc_duration_seconds", sel, by, (0.5, 0.9)),
                width=24,
            )
        )
    )


def overview() -> dash.Dashboard:
    board = base_dashboard(
        "drkernel-overview",
        "drkernel / Overview",
        "Every drkernel service: which pods answer, how many calls they serve and how fast.",
        None,
    )
    sel = selector()
    board = (
        board.with_row(dash.Row("Services"))
        .with_panel(
            number(
                "Pods up", "drkernel pods whose metrics port answers.", "none", query(f"sum(up{sel})", "up"), width=6
            )
        )
        .with_panel(
            number(
                "Pods down",
                "drkernel pods that Prometheus discovers but cannot scrape.",
                "none",
                query(f"count(up{sel} == 0) or vector(0)", "down"),
                width=6,
            )
        )
        .with_panel(
            number(
                "Calls per second",
                "Finished RPCs per second, all services.",
                "reqps",
                query(f"sum(rate(drkernel_rpc_total{sel}[$__rate_interval]))", "calls"),
                width=6,
            )
        )
        .with_panel(
            number(
                "Evaluations per second",
                "Sandbox evaluations finished per second.",
                "ops",
                query(f"sum(rate(drkernel_sandbox_evaluations_total{sel}[$__rate_interval]))", "evaluations"),
                width=6,
            )
        )
        .with_panel(
            graph(
                "Pods up by service",
                "Scrapable pods per service.",
                "none",
                [query(f"sum by (service) (up{sel})", "{{service}}")],
                width=24,
            )
        )
    )
    return rpc_panels(board, None)


def sandbox() -> dash.Dashboard:
    board = base_dashboard(
        "drkernel-sandbox",
        "drkernel / Sandbox",
        "The sandbox's evaluations: throughput and verdicts, queueing, latency, failures and rewards.",
        "sandbox",
    )
    sel = selector("sandbox")
    board = (
        board.with_row(dash.Row("Throughput"))
        .with_panel(
            graph(
                "Evaluations by verdict",
                "Finished evaluations per second by verdict.",
                "ops",
                [
                    query(
                        f"sum by (verdict) (rate(drkernel_sandbox_evaluations_total{sel}[$__rate_interval]))",
                        "{{verdict}}",
                    )
                ],
                stacked=True,
            )
        )
        .with_panel(
            graph(
                "Evaluations by device",
                "Finished evaluations per second by device kind.",
                "ops",
                [
                    query(
                        f"sum by (device) (rate(drkernel_sandbox_evaluations_total{sel}[$__rate_interval]))",
                        "{{device}}",
                    )
                ],
            )
        )
        .with_row(dash.Row("Capacity"))
        .with_panel(
            graph(
                "Busy workers",
                "Workers evaluating now, by device kind.",
                "none",
                [query(f"sum by (device) (drkernel_sandbox_busy_workers{sel})", "{{device}}")],
                width=8,
            )
        )
        .with_panel(
            graph(
                "Queue length",
                "Requests waiting for a worker, by device kind.",
                "none",
                [query(f"sum by (device) (drkernel_sandbox_queue_length{sel})", "{{device}}")],
                width=8,
            )
        )
        .with_panel(
            graph(
                "Wait for a worker",
                "How long requests waited in the queue (percentiles).",
                "s",
                quantiles("drkernel_sandbox_queue_seconds", sel, "device", (0.5, 0.9)),
                width=8,
            )
        )
        .with_row(dash.Row("Latency"))
        .with_panel(
            graph(
                "Evaluation time",
                "Time spent judging one candidate, queueing excluded (percentiles).",
                "s",
                quantiles("drkernel_sandbox_evaluation_seconds", sel, "device"),
                width=24,
            )
        )
        .with_row(dash.Row("Failures"))
        .with_panel(
            graph(
                "Timeouts",
                "Evaluations stopped at their time limit, per minute, by worker.",
                "none",
                [
                    query(
                        f"60 * sum by (device) (rate(drkernel_sandbox_timeouts_total{sel}[$__rate_interval]))",
                        "{{device}}",
                    )
                ],
                width=8,
            )
        )
        .with_panel(
            graph(
                "Candidate deaths",
                "Candidate processes that died mid-evaluation, per minute, by worker.",
                "none",
                [
                    query(
                        f"60 * sum by (device) (rate(drkernel_sandbox_candidate_deaths_total{sel}[$__rate_interval]))",
                        "{{device}}",
                    )
                ],
                width=8,
            )
        )
        .with_panel(
            graph(
                "Judge restarts",
                "Judge processes started after the first, per minute, by worker (planned replacements included).",
                "none",
                [
                    query(
                        f"60 * sum by (device) (rate(drkernel_sandbox_judge_restarts_total{sel}[$__rate_interval]))",
                        "{{device}}",
                    )
                ],
                width=8,
            )
        )
        .with_row(dash.Row("Reward"))
        .with_panel(
            graph(
                "Reward",
                "Mean and percentiles of the rewards handed out.",
                "none",
                [
                    query(
                        f"sum(rate(drkernel_sandbox_reward_sum{sel}[$__rate_interval])) "
                        f"/ sum(rate(drkernel_sandbox_reward_count{sel}[$__rate_interval]))",
                        "mean",
                    ),
                    *quantiles("drkernel_sandbox_reward", sel, "", (0.5, 0.9)),
                ],
                width=24,
            )
        )
    )
    return rpc_panels(board, "sandbox")


def policy() -> dash.Dashboard:
    board = base_dashboard(
        "drkernel-policy",
        "drkernel / Policy",
        "The policy's generation: requests, tokens, latency to first and last token, and weight updates.",
        "policy",
    )
    sel = selector("policy")
    board = (
        board.with_row(dash.Row("Generation"))
        .with_panel(
            graph(
                "Requests by outcome",
                "Generation requests per second by outcome.",
                "reqps",
                [
                    query(
                        f"sum by (outcome) (rate(drkernel_policy_requests_total{sel}[$__rate_interval]))", "{{outcome}}"
                    )
                ],
                stacked=True,
            )
        )
        .with_panel(
            graph(
                "Tokens",
                "Tokens per second, prompt and generated.",
                "short",
                [query(f"sum by (kind) (rate(drkernel_policy_tokens_total{sel}[$__rate_interval]))", "{{kind}}")],
            )
        )
        .with_panel(
            graph(
                "Completions by finish reason",
                "Finished samples per second by why they stopped.",
                "ops",
                [
                    query(
                        f"sum by (finish_reason) (rate(drkernel_policy_completions_total{sel}[$__rate_interval]))",
                        "{{finish_reason}}",
                    )
                ],
                stacked=True,
            )
        )
        .with_panel(
            graph(
                "Requests in flight",
                "Admitted requests waiting for their first token, and those producing tokens.",
                "none",
                [
                    query(f"sum(drkernel_policy_queued_requests{sel})", "queued"),
                    query(f"sum(drkernel_policy_running_requests{sel})", "running"),
                ],
            )
        )
        .with_row(dash.Row("Latency"))
        .with_panel(
            graph(
                "Time to first token",
                "From admission to the first token: queueing and prefill (percentiles).",
                "s",
                quantiles("drkernel_policy_first_token_seconds", sel, ""),
            )
        )
        .with_panel(
            graph(
                "Generation time",
                "From admission to the last token of a request (percentiles).",
                "s",
                quantiles("drkernel_policy_generation_seconds", sel, ""),
            )
        )
        .with_row(dash.Row("Weights"))
        .with_panel(
            graph(
                "Weights version",
                "Version of the weights each pod serves.",
                "none",
                [query(f"max by (pod) (drkernel_policy_weights_version{sel})", "{{pod}}")],
                width=8,
            )
        )
        .with_panel(
            graph(
                "Weight updates",
                "Applied weight updates per minute by source.",
                "none",
                [
                    query(
                        f"60 * sum by (source) (rate(drkernel_policy_weight_updates_total{sel}[$__rate_interval]))",
                        "{{source}}",
                    )
                ],
                width=8,
            )
        )
        .with_panel(
            graph(
                "Weight update time",
                "Time to apply an update, waiting for running requests excluded (percentiles).",
                "s",
                quantiles("drkernel_policy_weight_update_seconds", sel, "", (0.5, 0.9)),
                width=8,
            )
        )
    )
    return rpc_panels(board, "policy")


def trainer() -> dash.Dashboard:
    board = base_dashboard(
        "drkernel-trainer",
        "drkernel / Training",
        "Training runs, from each step's metrics: reward, correctness and reward hacking, mismatch (MRS) and "
        "profiling-based (PRS) rejection, log-prob mismatch, and where each step's time goes.",
        "trainer",
    ).with_variable(
        dash.QueryVariable("run")
        .label("Run")
        .datasource(DATASOURCE)
        .query('label_values(drkernel_trainer_step{job=~"$job", namespace=~"$namespace"}, run)')
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(VariableSort.ALPHABETICAL_ASC)
        .multi(True)
        .include_all(True)
        .all_value(".*")
    )
    sel = selector("trainer")
    runs = sel.replace("}", ', run=~"$run"}')

    def per_run(title: str, description: str, unit: str, metric: str, *, width: int = 8) -> timeseries.Panel:
        return graph(title, description, unit, [query(f"max by (run) ({metric}{runs})", "{{run}}")], width=width)

    def finished(state: str) -> prometheus.Dataquery:
        matchers = sel.replace("}", f', state="{state}"}}')
        return query(f"sum(increase(drkernel_trainer_runs_finished_total{matchers}[24h])) or vector(0)", state)

    board = (
        board.with_row(dash.Row("Runs"))
        .with_panel(
            number(
                "Active runs",
                "Runs pending or running now.",
                "none",
                query(f"sum(drkernel_trainer_active_runs{sel})", "active"),
            )
        )
        .with_panel(
            number(
                "Started (24 h)",
                "Run processes started in the last 24 hours, resumes included.",
                "none",
                query(f"sum(increase(drkernel_trainer_runs_started_total{sel}[24h])) or vector(0)", "started"),
            )
        )
        .with_panel(
            number(
                "Succeeded (24 h)",
                "Runs that did every step asked for, in the last 24 hours.",
                "none",
                finished("succeeded"),
            )
        )
        .with_panel(
            number(
                "Failed (24 h)", "Runs that failed in the last 24 hours; GetRun says why.", "none", finished("failed")
            )
        )
        .with_panel(per_run("Step", "Last finished step of each run.", "none", "drkernel_trainer_step", width=12))
        .with_panel(
            per_run(
                "Weights version",
                "Weights version each run last pushed to the policy.",
                "none",
                "drkernel_trainer_weights_version",
                width=12,
            )
        )
        .with_row(dash.Row("Reward"))
        .with_panel(
            per_run(
                "Mean reward",
                "Mean reward over the turns of each run's last step.",
                "none",
                "drkernel_trainer_reward_mean",
            )
        )
        .with_panel(
            per_run(
                "Correct",
                "Share of the last step's turns whose kernel was judged correct.",
                "percentunit",
                "drkernel_trainer_correct_rate",
            )
        )
        .with_panel(
            per_run(
                "Hacked",
                "Share of the last step's turns judged to hack the reward.",
                "percentunit",
                "drkernel_trainer_hacked_rate",
            )
        )
        .with_row(dash.Row("Rejection sampling"))
        .with_panel(
            per_run(
                "MRS rejected",
                "Share of trajectories dropped because learner and sampler log-probs "
                "disagreed (mismatch rejection sampling).",
                "percentunit",
                "drkernel_trainer_mrs_rejected_rate",
            )
        )
        .with_panel(
            per_run(
                "PRS rejected",
                "Share rejected by profiling-based rejection sampling (correct kernels "
                "owning little of the device time).",
                "percentunit",
                "drkernel_trainer_prs_rejected_rate",
            )
        )
        .with_panel(
            per_run(
                "Vetoed",
                "Share vetoed by a token whose learner/sampler probability ratio is below the veto threshold.",
                "percentunit",
                "drkernel_trainer_veto_rate",
            )
        )
        .with_panel(
            per_run(
                "Log-prob mismatch",
                "How far the learner's log-probs are from the sampler's (0: identical); "
                "growth means the two engines drift apart.",
                "none",
                "drkernel_trainer_logprob_mismatch",
                width=24,
            )
        )
        .with_row(dash.Row("Step time"))
        .with_panel(
            graph(
                "Step time by phase",
                "Seconds the last step spent per phase. Generating and evaluating are summed over turns that overlap, "
                "so the stack can exceed the step's wall-clock time; pick one run.",
                "s",
                [query(f"max by (run, phase) (drkernel_trainer_phase_seconds{runs})", "{{run}} {{phase}}")],
                stacked=True,
            )
        )
        .with_panel(
            per_run(
                "Step wall-clock time",
                "Seconds from the start to the end of each run's last step.",
                "s",
                "drkernel_trainer_step_seconds",
                width=12,
            )
        )
    )
    return rpc_panels(board, "trainer")


DASHBOARDS: dict[str, Callable[[], dash.Dashboard]] = {
    "drkernel-overview.json": overview,
    "drkernel-sandbox.json": sandbox,
    "drkernel-policy.json": policy,
    "drkernel-trainer.json": trainer,
}


def render_dashboards() -> dict[str, str]:
    """Every dashboard as the JSON text that is committed, keyed by file name."""
    encoder = JSONEncoder(sort_keys=True, indent=2)
    rendered = {}
    for name, build in DASHBOARDS.items():
        board = build().build()
        for number, panel in enumerate(board.panels or [], start=1):
            panel.id_val = number  # unique ids, so that links to a single panel work
        rendered[name] = encoder.encode(board) + "\n"
    return rendered


def render_prometheus_rule(rules_text: str) -> str:
    """The PrometheusRule holding the groups of the rule file ``rules_text``, verbatim."""
    header = (
        "# Generated by ../generate.py from ../rules/drkernel.rules.yml: edit the rule file, not this.\n"
        "# The alert rules for a Prometheus run by the Prometheus Operator; its ruleSelector must\n"
        '# match this object (README.md, "Prometheus Operator").\n'
        "apiVersion: monitoring.coreos.com/v1\n"
        "kind: PrometheusRule\n"
        "metadata:\n"
        "  name: drkernel\n"
        "spec:\n"
    )
    body = rules_text[rules_text.index("groups:") :]
    return header + "".join(f"  {line}" if line.strip() else line for line in body.splitlines(keepends=True))


def render() -> dict[Path, str]:
    """Every generated file's text, keyed by its path under deploy/monitoring."""
    rendered = {Path("dashboards") / name: text for name, text in render_dashboards().items()}
    rendered[PROMETHEUS_RULE] = render_prometheus_rule((MONITORING / RULES).read_text())
    return rendered


def stale_files(rendered: dict[Path, str], directory: Path = MONITORING) -> list[Path]:
    """Paths whose committed file differs from ``rendered`` or is missing, and stray dashboards."""
    present = {path.relative_to(directory) for path in (directory / "dashboards").glob("*.json")}
    differing = [
        path
        for path, text in rendered.items()
        if not (directory / path).is_file() or (directory / path).read_text() != text
    ]
    return sorted(differing + sorted(present - rendered.keys()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Exit 1 if the committed files are out of date.")
    args = parser.parse_args(argv)
    rendered = render()
    if args.check:
        stale = stale_files(rendered)
        for path in stale:
            print(f"{MONITORING / path} is out of date: run python {Path(__file__).name}", file=sys.stderr)
        return 1 if stale else 0
    for stray in {
        path.relative_to(MONITORING) for path in (MONITORING / "dashboards").glob("*.json")
    } - rendered.keys():
        (MONITORING / stray).unlink()
    for path, text in rendered.items():
        (MONITORING / path).parent.mkdir(exist_ok=True)
        (MONITORING / path).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
