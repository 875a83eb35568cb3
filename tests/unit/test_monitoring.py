"""The monitoring component (manifests/overlays/monitoring) agrees with the code: every series the
alerts and the dashboard query is one a fleetsched process registers, the rules pass
`promtool check rules` and fire where their runbook says (`promtool test rules`), every alert has
its runbook section, the ServiceMonitor scrapes every fleetsched Service's metrics port, and the
series Karmada's "Scheduler Insights" dashboard queries (docs/monitoring.md) are all exported."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry
from test_manifests import kustomize, prepared_tree

# every process's metrics: the scheduler's and the policy controller's (one registry module),
# the estimator's and the webhook's
import fleetsched.controller.policy.command
import fleetsched.controller.scheduler.command  # noqa: F401  (the imports register their series)
from fleetsched.controller.runtime import metrics
from fleetsched.estimator.server import EstimatorMetrics
from fleetsched.webhook.server import Metrics as WebhookMetrics
from tests.support.helm import template, template_text

ROOT = Path(__file__).resolve().parents[2]
COMPONENT = ROOT / "manifests" / "overlays" / "monitoring"
RUNBOOK = ROOT / "docs" / "runbook.md"
MONITORING_DOC = ROOT / "docs" / "monitoring.md"
# Series Prometheus makes itself, not a process.
PROMETHEUS_SERIES = {"up"}
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"),
             "summary": ("_sum", "_count", ""), "gauge": ("",), "info": ("_info",), "unknown": ("",)}


def series_of(registry: CollectorRegistry) -> set[str]:
    """The sample names a registry exposes (a counter family ``x`` is sampled as ``x_total``)."""
    found = set()
    for family in registry.collect():
        found |= {family.name + suffix for suffix in _SUFFIXES.get(family.type, ("",))}
    return found


@pytest.fixture(scope="module")
def registered() -> set[str]:
    return (series_of(metrics.REGISTRY) | series_of(EstimatorMetrics().registry)
            | series_of(WebhookMetrics().registry))


# Loosely: strings, label matchers, ranges, grouping clauses and template variables out; what is left
# and not followed by "(" (a function or aggregation) or a keyword is a metric name.
_STRIP = [r'"(?:[^"\\]|\\.)*"', r"\{[^}]*\}", r"\[[^\]]*\]",
          r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\$\w+"]
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "inf", "nan"}


def metric_occurrences(expr: str) -> list[str]:
    """Every metric selector's name in ``expr``, once per occurrence."""
    for pattern in _STRIP:
        expr = re.sub(pattern, " ", expr)
    names = re.findall(r"(?<![\w.:])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w:])(?!\s*\()", expr)
    return [name for name in names if name.lower() not in _KEYWORDS]


def metric_names(expr: str) -> set[str]:
    return set(metric_occurrences(expr))


def test_the_name_parser_finds_metrics_and_nothing_else() -> None:
    expr = ('histogram_quantile(0.99, sum by (le, job) (rate(a_bucket{step="Total", x=~"y|z"}'
            '[$__rate_interval]))) / clamp_min(sum(rate(b_total[5m])) or vector(0), 1e-6) > 0.05'
            ' and on (job) c')
    assert metric_names(expr) == {"a_bucket", "b_total", "c"}


def rule_file() -> dict[str, Any]:
    rule = yaml.safe_load((COMPONENT / "prometheusrule.yaml").read_text())
    assert rule["kind"] == "PrometheusRule"
    spec: dict[str, Any] = rule["spec"]
    return spec


def alerts() -> list[dict[str, Any]]:
    return [r for group in rule_file()["groups"] for r in group["rules"] if "alert" in r]


def dashboard() -> dict[str, Any]:
    board: dict[str, Any] = json.loads((COMPONENT / "fleetsched-dashboard.json").read_text())
    return board


def dashboard_panels() -> Iterator[dict[str, Any]]:
    def walk(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for panel in panels:
            yield panel
            yield from walk(panel.get("panels", []))

    yield from walk(dashboard()["panels"])


def dashboard_queries() -> Iterator[tuple[str, str]]:
    for panel in dashboard_panels():
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]


# Every selector of every panel is narrowed by the dashboard's variables.
SCOPE = 'namespace=~"$namespace", job=~"$job", instance=~"$instance"}'


def test_the_dashboard_has_namespace_job_and_instance_variables() -> None:
    variables = {v["name"]: v for v in dashboard()["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    queries = {name: variables[name]["query"]["query"] for name in ("namespace", "job", "instance")}
    # chained: the jobs of the chosen namespaces, the instances of the chosen jobs
    assert queries == {
        "namespace": "label_values(karmada_build_info, namespace)",
        "job": 'label_values(karmada_build_info{namespace=~"$namespace"}, job)',
        "instance": 'label_values(karmada_build_info{namespace=~"$namespace", job=~"$job"}, instance)',
    }
    for name in queries:
        assert variables[name]["multi"] and variables[name]["includeAll"], name
        assert variables[name]["allValue"] == ".*", name  # =~".*" also matches a series without the label
    for title, expr in dashboard_queries():
        selectors = metric_occurrences(expr)
        assert selectors and expr.count(SCOPE) == len(selectors), (title, expr)


def test_every_dashboard_query_parses(tmp_path: Path) -> None:
    """promtool parses each query (Grafana's variables replaced as Grafana would, "All" chosen)."""
    rules = [{"record": f"dashboard:query_{i}",
              "expr": expr.replace("$__rate_interval", "5m").replace("$namespace", ".*")
              .replace("$job", ".*").replace("$instance", ".*")}
             for i, (_, expr) in enumerate(dashboard_queries())]
    groups = {"groups": [{"name": "dashboard", "rules": rules}]}
    (tmp_path / "queries.yaml").write_text(yaml.safe_dump(groups))
    done = subprocess.run([promtool(), "check", "rules", str(tmp_path / "queries.yaml")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


BYTES = "memory|ephemeral-storage|hugepages-.+"


def test_one_unit_per_axis() -> None:
    """A panel's left axis has its default unit; a series of another unit goes to the right axis
    (an override setting both), and no panel mixes resources of different units on one axis."""
    for panel in dashboard_panels():
        if panel["type"] != "timeseries":
            continue
        units = {"left": {panel["fieldConfig"]["defaults"]["unit"]}, "right": set()}
        for override in panel["fieldConfig"].get("overrides", []):
            properties = {p["id"]: p["value"] for p in override["properties"]}
            if "unit" in properties:
                assert properties.get("custom.axisPlacement") == "right", panel["title"]
                units["right"].add(properties["unit"])
        assert all(len(u) <= 1 for u in units.values()), (panel["title"], units)
        for target in panel["targets"]:
            if "fleetsched_scheduler_assumed_resources" not in target["expr"]:
                continue
            # cores, bytes and counts each in a panel of their own
            matcher = re.search(r'resource(=|=~|!~)"([^"]*)"', target["expr"])
            assert matcher, (panel["title"], target["expr"])
            unit = units["left"].pop()
            expected = {("=", "cpu"): "short", ("=~", BYTES): "bytes", ("!~", f"cpu|{BYTES}"): "short"}
            assert expected[(matcher[1], matcher[2])] == unit, panel["title"]
            if matcher[2] == "cpu":
                assert panel["fieldConfig"]["defaults"]["custom"]["axisLabel"] == "cores"


def test_every_alert_uses_only_series_the_code_registers(registered: set[str]) -> None:
    for alert in alerts():
        names = metric_names(alert["expr"])
        assert names, alert["alert"]
        unknown = names - registered - PROMETHEUS_SERIES
        assert not unknown, f"{alert['alert']} queries {sorted(unknown)}, which no process registers"


def test_every_dashboard_query_uses_only_series_the_code_registers(registered: set[str]) -> None:
    queries = list(dashboard_queries())
    assert len(queries) > 20
    for title, expr in queries:
        names = metric_names(expr)
        assert names, title
        unknown = names - registered - PROMETHEUS_SERIES
        assert not unknown, f"panel {title!r} queries {sorted(unknown)}, which no process registers"


def test_the_dashboard_covers_every_component() -> None:
    text = " ".join(expr for _, expr in dashboard_queries())
    for prefix in ("karmada_scheduler_schedule_", "karmada_scheduler_estimator_",
                   "controller_runtime_webhook_", "fleetsched_policy_controller_", "_shard_members",
                   "workqueue_", "rest_client_"):
        assert prefix in text, prefix


def promtool() -> str:
    found = shutil.which("promtool")
    assert found, "no promtool on PATH: hack/test.sh installs it (Debian's prometheus package)"
    return found


def test_promtool_accepts_the_rules(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(rule_file()))
    done = subprocess.run([promtool(), "check", "rules", str(rules)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in done.stdout


def runbook_base() -> str:
    """The component's runbook address (runbook.yaml), which its replacement writes before "#"."""
    config = yaml.safe_load((COMPONENT / "runbook.yaml").read_text())
    assert config["metadata"]["annotations"] == {"config.kubernetes.io/local-config": "true"}
    base: str = config["data"]["baseURL"]
    return base


def test_the_promtool_command_of_the_docs_checks_the_rules(tmp_path: Path) -> None:
    """docs/monitoring.md's command, run as written (from the repository's root, promtool on PATH)."""
    text = MONITORING_DOC.read_text()
    section = text[text.index("### Checking the rules yourself"):]
    (block,) = re.findall(r"```sh\n(.*?)```", section[: section.index("\n## ")], re.S)
    script = block.replace("fleetsched-rules.yaml", str(tmp_path / "fleetsched-rules.yaml"))
    # python3 is this interpreter (it has PyYAML), promtool the one the other tests use
    path = f"{Path(sys.executable).parent}:{Path(promtool()).parent}:/usr/bin:/bin"
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, env={"PATH": path})
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in done.stdout
    assert yaml.safe_load((tmp_path / "fleetsched-rules.yaml").read_text()) == rule_file()


def test_every_alert_has_its_runbook_section() -> None:
    text = RUNBOOK.read_text()
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-")
               for h in re.findall(r"^#+ (.+)$", text, re.M)}
    base = runbook_base()
    assert re.fullmatch(r"https://[^/#]+/[^#]*", base), base  # absolute: a link in Alertmanager and Grafana
    for alert in alerts():
        url = alert["annotations"]["runbook_url"]
        address, _, anchor = url.partition("#")
        assert address == base and anchor == alert["alert"].lower(), url
        assert anchor in anchors, f"docs/runbook.md has no section {alert['alert']}"
        section = text[text.index(f"## {alert['alert']}"):]
        section = section[: section.find("\n## ", 3)] if "\n## " in section[3:] else section
        for part in ("Meaning", "Check", "Fix"):
            assert f"**{part}**" in section, (alert["alert"], part)


def test_the_runbook_address_is_set_in_one_place(tmp_path: Path) -> None:
    """kustomize: runbook.yaml's baseURL reaches every alert (and is not emitted); the chart:
    monitoring.runbookBaseURL does, and a relative one is refused naming the value."""
    tree = tmp_path / "manifests"
    shutil.copytree(ROOT / "manifests", tree, ignore=shutil.ignore_patterns("*.crt", "*.key"))
    runbook = tree / "overlays" / "monitoring" / "runbook.yaml"
    runbook.write_text(runbook.read_text().replace(runbook_base(), "https://runbooks.mine/fleetsched.md"))
    overlay = tmp_path / "mine"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "components": ["../manifests/overlays/monitoring"],
    }))
    docs = kustomize(overlay)
    assert not [d for d in docs if d["metadata"]["name"] == "fleetsched-runbook"]
    (rule,) = [d for d in docs if d["kind"] == "PrometheusRule"]
    urls = [r["annotations"]["runbook_url"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert urls == [f"https://runbooks.mine/fleetsched.md#{a['alert'].lower()}" for a in alerts()]

    wiki = "https://wiki.mine/on-call/fleetsched"
    rendered = template("monitoring.enabled=true", f"monitoring.runbookBaseURL={wiki}")
    (rule,) = [d for d in rendered if d["kind"] == "PrometheusRule"]
    urls = [r["annotations"]["runbook_url"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert urls == [f"{wiki}#{a['alert'].lower()}" for a in alerts()]
    refused = template_text("monitoring.enabled=true", "monitoring.runbookBaseURL=docs/runbook.md",
                            check=False)
    assert refused.returncode != 0
    assert 'monitoring.runbookBaseURL: "docs/runbook.md" is not an absolute http(s) URL' in refused.stderr


def test_the_chart_labels_the_monitoring_objects_for_the_prometheus_that_selects_them() -> None:
    """kube-prometheus-stack's Prometheus selects ServiceMonitors and rules by ``release``."""
    def monitoring_objects(*sets: str) -> list[dict[str, Any]]:
        return [d for d in template("monitoring.enabled=true", *sets)
                if d["kind"] in ("ServiceMonitor", "PrometheusRule")
                or d["metadata"]["name"] == "fleetsched-grafana-dashboard"]

    labelled = monitoring_objects("monitoring.labels.release=kube-prometheus-stack")
    assert len(labelled) == 3
    for obj in labelled:
        assert obj["metadata"]["labels"]["release"] == "kube-prometheus-stack", obj["kind"]
        assert obj["metadata"]["labels"]["app.kubernetes.io/part-of"] == "fleetsched"
    dashboard = next(o for o in labelled if o["kind"] == "ConfigMap")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert not [o for o in monitoring_objects() if "release" in o["metadata"]["labels"]]


def test_the_karmada_scheduler_insights_series_are_all_exported(registered: set[str]) -> None:
    text = MONITORING_DOC.read_text()
    section = text[text.index("Scheduler Insights"):]
    section = section[: section.index("\n## ")]
    prefixes = "karmada|scheduler|workqueue|controller_runtime|process"
    listed = set(re.findall(rf"`((?:{prefixes})_[a-z0-9_]*[a-z0-9])`", section))
    assert len(listed) >= 20
    # a histogram may be named by its family (in the note on Karmada's alert rules)
    known = registered | {name.removesuffix("_bucket") for name in registered}
    assert not listed - known, sorted(listed - known)


@pytest.fixture(scope="module")
def monitored(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("monitored")
    prepared_tree(tmp)
    overlay = tmp / "mine"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": ["../manifests"], "components": ["../manifests/overlays/monitoring"],
    }))
    return kustomize(overlay)


def test_the_service_monitor_scrapes_every_fleetsched_metrics_port(monitored: list[dict[str, Any]]) -> None:
    (monitor,) = [d for d in monitored if d["kind"] == "ServiceMonitor"]
    selector = monitor["spec"]["selector"]["matchLabels"]
    ports = {e["port"] for e in monitor["spec"]["endpoints"]}
    services = [d for d in monitored if d["kind"] == "Service"]
    with_metrics = {s["metadata"]["name"] for s in services
                    if any(p.get("name") in ports for p in s["spec"]["ports"])}
    selected = {s["metadata"]["name"] for s in services
                if selector.items() <= s["metadata"].get("labels", {}).items()}
    # the scheduler, the policy controller, the webhook and one estimator per member
    assert {"fleetsched-scheduler-metrics", "fleetsched-controller-metrics", "fleetsched-webhook",
            "karmada-scheduler-estimator-member1"} <= with_metrics
    assert with_metrics <= selected
    # the job label (jobLabel: app) names each component, as the alerts and the dashboard expect
    job_label = monitor["spec"]["jobLabel"]
    jobs = {s["metadata"]["labels"][job_label] for s in services if s["metadata"]["name"] in with_metrics}
    assert "fleetsched-webhook" in jobs
    assert monitor["metadata"]["namespace"] == "fleetsched-system"


def test_the_component_ships_the_rules_and_the_dashboard(monitored: list[dict[str, Any]]) -> None:
    (rule,) = [d for d in monitored if d["kind"] == "PrometheusRule"]
    assert rule["spec"] == rule_file()
    (board,) = [d for d in monitored
                if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "fleetsched-grafana-dashboard"]
    assert board["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(board["data"]["fleetsched-dashboard.json"]) == json.loads(
        (COMPONENT / "fleetsched-dashboard.json").read_text())


def expected(alert: str, labels: dict[str, str]) -> dict[str, Any]:
    """The alert as promtool should see it fire: its labels and its annotations, ``$labels`` filled."""
    (rule,) = [r for r in alerts() if r["alert"] == alert]
    annotations = {}
    for key, text in rule["annotations"].items():
        assert "$value" not in text, f"{alert}: the scenario test cannot render $value"
        annotations[key] = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m[1]], text)
    return {"exp_labels": {**labels, **rule["labels"]}, "exp_annotations": annotations}


# (alert, input series, when, the labels it fires with; None: it must not fire)
SCENARIOS = [
    pytest.param("FleetschedSchedulerNoLeader", {
        'fleetsched_scheduler_is_leader{job="fleetsched-scheduler",instance="a"}': "0x20",
        'fleetsched_scheduler_is_leader{job="fleetsched-scheduler",instance="b"}': "0x20",
        'fleetsched_scheduler_shard_member_lease_held{job="fleetsched-scheduler",instance="a"}': "0x20",
    }, "10m", {}, id="no replica leads"),
    pytest.param("FleetschedSchedulerNoLeader", {
        'fleetsched_scheduler_is_leader{job="fleetsched-scheduler",instance="a"}': "1x20",
        'fleetsched_scheduler_is_leader{job="fleetsched-scheduler",instance="b"}': "0x20",
        # another job's gauge at 0 (before issue 29 the policy controller exported the scheduler's)
        'fleetsched_scheduler_is_leader{job="fleetsched-controller",instance="c"}': "0x20",
    }, "10m", None, id="one replica leads"),
    pytest.param("FleetschedSchedulerNoLeader", {
        'fleetsched_scheduler_is_leader{job="fleetsched-scheduler",instance="a"}': "0x20",
        'fleetsched_scheduler_shard_member_lease_held{job="fleetsched-scheduler",instance="a"}': "1x20",
    }, "10m", None, id="sharded replicas hold their member Leases"),
    pytest.param("FleetschedPolicyControllerNoLeader", {
        'up{job="fleetsched-controller",instance="c"}': "1x20",
        'fleetsched_policy_controller_is_leader{job="fleetsched-controller",instance="c"}': "0x20",
    }, "10m", {}, id="no policy controller leads"),
    pytest.param("FleetschedPolicyControllerNoLeader", {
        'up{job="fleetsched-controller",instance="c"}': "1x20",
        'fleetsched_policy_controller_is_leader{job="fleetsched-controller",instance="c"}': "1x20",
    }, "10m", None, id="a policy controller leads"),
    pytest.param("FleetschedPolicyControllerNoLeader", {
        'up{job="fleetsched-scheduler",instance="a"}': "1x20",
        'fleetsched_scheduler_is_leader{job="fleetsched-scheduler",instance="a"}': "1x20",
    }, "10m", None, id="beside Karmada no policy controller is deployed"),
    pytest.param("FleetschedBindingsUnschedulable", {
        'fleetsched_scheduler_unscheduled_bindings{job="fleetsched-scheduler",instance="a",reason="NoClusterFit"}':
            "2x40",
        'fleetsched_scheduler_unscheduled_bindings{job="fleetsched-scheduler",instance="a",reason="SchedulerError"}':
            "0x40",
    }, "35m", {"reason": "NoClusterFit"}, id="no cluster fits for 30 minutes"),
    pytest.param("FleetschedBindingsUnschedulable", {
        'fleetsched_scheduler_unscheduled_bindings{job="fleetsched-scheduler",instance="a",reason="NoClusterFit"}':
            "2x20 0x20",
    }, "35m", None, id="the bindings were scheduled"),
    pytest.param("FleetschedBindingsUnschedulable", {
        'fleetsched_scheduler_unscheduled_bindings{namespace="team-a",job="fleetsched-scheduler",reason="Unschedulable"}':
            "1x40",
        'fleetsched_scheduler_unscheduled_bindings{namespace="team-b",job="fleetsched-scheduler",reason="Unschedulable"}':
            "0x40",
    }, "35m", {"namespace": "team-a", "reason": "Unschedulable"}, id="two installs: the one concerned"),
    pytest.param("FleetschedBindingsUnschedulable", {
        'fleetsched_scheduler_unscheduled_bindings{job="fleetsched-scheduler",instance="a",reason="SchedulerError"}':
            "3x40",
    }, "35m", None, id="scheduler errors are not unschedulable"),
    pytest.param("FleetschedSchedulingErrors", {
        'fleetsched_scheduler_unscheduled_bindings{job="fleetsched-scheduler",instance="a",reason="SchedulerError"}':
            "1x20",
    }, "15m", {}, id="a binding the scheduler failed on"),
    pytest.param("FleetschedSchedulingErrors", {
        'fleetsched_scheduler_unscheduled_bindings{job="fleetsched-scheduler",instance="a",reason="Unschedulable"}':
            "5x20",
        'fleetsched_scheduler_unscheduled_bindings{job="fleetsched-scheduler",instance="a",reason="SchedulerError"}':
            "0x20",
    }, "15m", None, id="unschedulable bindings are no scheduler error"),
    pytest.param("FleetschedPluginBroken", {
        'fleetsched_scheduler_plugin_broken{job="fleetsched-scheduler",profile="default-scheduler",plugin="Slow"}':
            "1x20",
    }, "10m", {"profile": "default-scheduler", "plugin": "Slow"}, id="a broken plugin"),
    pytest.param("FleetschedEstimatorNotSynced", {
        'fleetsched_estimator_cache_synced{job="karmada-scheduler-estimator-m1",instance="e"}': "1x20",
        'fleetsched_estimator_watch_connected{job="karmada-scheduler-estimator-m1",instance="e"}': "0x20",
    }, "15m", {"job": "karmada-scheduler-estimator-m1", "instance": "e"}, id="a watch down"),
    pytest.param("FleetschedWebhookDown", {
        'up{job="fleetsched-controller",instance="c"}': "1x20",
        'up{job="fleetsched-webhook",instance="w"}': "0x20",
    }, "10m", {}, id="webhook not scraped"),
    pytest.param("FleetschedWebhookDown", {
        'up{job="fleetsched-controller",instance="c"}': "1x20",
    }, "10m", {}, id="no webhook target at all"),
    pytest.param("FleetschedWebhookDown", {
        'up{job="fleetsched-controller",instance="c"}': "1x20",
        'up{job="fleetsched-webhook",instance="w"}': "1x20",
    }, "10m", None, id="webhook scraped"),
    pytest.param("FleetschedWebhookDown", {
        'up{job="fleetsched-scheduler",instance="a"}': "1x20",
    }, "10m", None, id="beside Karmada no webhook is deployed"),
]


@pytest.mark.parametrize(("alert", "series", "at", "fires"), SCENARIOS)
def test_the_alert_fires_when_its_runbook_says(tmp_path: Path, alert: str, series: dict[str, str], at: str,
                                                fires: dict[str, str] | None) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule_file()))
    case = {
        "interval": "1m",
        "input_series": [{"series": name, "values": values} for name, values in series.items()],
        "alert_rule_test": [{"eval_time": at, "alertname": alert,
                             "exp_alerts": [] if fires is None else [expected(alert, fires)]}],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "tests": [case]}))
    done = subprocess.run([promtool(), "test", "rules", "test.yaml"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_beside_karmada_the_component_watches_the_scheduler_in_its_namespace(tmp_path: Path) -> None:
    """As docs/monitoring.md says: the component added to overlays/beside-karmada lands in karmada-system,
    where its ServiceMonitor selects the scheduler's metrics Service."""
    tree = tmp_path / "manifests"
    shutil.copytree(ROOT / "manifests", tree, ignore=shutil.ignore_patterns("*.crt", "*.key"))
    overlay = tree / "overlays" / "beside-karmada" / "kustomization.yaml"
    config = yaml.safe_load(overlay.read_text())
    config["components"] = [*config.get("components", []), "../monitoring"]
    overlay.write_text(yaml.safe_dump(config))
    docs = kustomize(overlay.parent)
    (monitor,) = [d for d in docs if d["kind"] == "ServiceMonitor"]
    (service,) = [d for d in docs
                  if d["kind"] == "Service" and d["metadata"]["name"] == "fleetsched-scheduler-metrics"]
    assert monitor["metadata"]["namespace"] == service["metadata"]["namespace"] == "karmada-system"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert {p["name"] for p in service["spec"]["ports"]} >= {e["port"] for e in monitor["spec"]["endpoints"]}
