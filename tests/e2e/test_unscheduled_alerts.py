"""Issue 29 item 3 on the real kube-apiserver: the bindings no cluster fits appear in
``fleetsched_scheduler_unscheduled_bindings{reason}``, and the alerts, run by ``promtool test rules``
on the series this scheduler exported (its /metrics scraped at each step of the run, not a
hand-written list), fire where the runbook says: FleetschedBindingsUnschedulable for the NoClusterFit
and the Unschedulable bindings, no other alert (FleetschedSchedulingErrors, which read
``schedule_attempts_total{result="error"}`` before, stays quiet), and the Unschedulable one resolves
once a Cluster reports room for those bindings.

The timeline given to promtool, one sample a minute with the job and instance labels the
ServiceMonitor gives: the scrape before any binding for 10 minutes, the scrape with the bindings
unscheduled for 40 minutes, the scrape after a NoClusterFit binding was deleted and room reported for
20 minutes.
"""

from __future__ import annotations

import math
import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.support.controlplane import APIServer, wait_until
from tests.support.overcommit import CLUSTERS, MERGE, RB_NS, cpu_binding, cpu_cluster, create_all, tally
from tests.support.processes import SchedulerProcess

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "manifests" / "overlays" / "monitoring" / "prometheusrule.yaml"
GAUGE = "fleetsched_scheduler_unscheduled_bindings"
ATTEMPTS = "karmada_scheduler_schedule_attempts_total"
NAMESPACE = "unscheduled"
JOB = "fleetsched-scheduler"
INSTALL = "fleetsched-system"  # the namespace label the ServiceMonitor gives
NO_FIT = 3  # bindings for a cluster that does not exist
SHORT = 2  # bindings of 10 one-core replicas for a cluster with 1 core
# the three scrapes' spans in the timeline, in one-minute samples
BEFORE, UNSCHEDULED, AFTER = 10, 40, 20


Scrape = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(proc: SchedulerProcess) -> Scrape:
    """Every sample of the scheduler's /metrics, by name and labels."""
    samples: Scrape = {}
    for family in text_string_to_metric_families(proc.metrics()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = float(sample.value)
    return samples


def value(samples: Scrape, name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls))


def settled(samples: Scrape, wanted: dict[tuple[str, str, str], float]) -> Scrape | None:
    """``samples`` when each (name, label, label value) has its wanted value, else None."""
    if all(value(samples, name, **{label: v}) == want for (name, label, v), want in wanted.items()):
        return samples
    return None


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _number(number: float) -> str:
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Inf" if number > 0 else "-Inf"
    return repr(number)


def input_series(timeline: list[tuple[Scrape, int]], instance: str) -> list[dict[str, str]]:
    """promtool's input_series from the scrapes, each held for its number of minutes ("_": absent),
    labelled as the ServiceMonitor's scrape would be (job, instance, namespace) with ``up`` 1 for every
    scrape."""
    keys = sorted({key for samples, _ in timeline for key in samples})
    out = []
    for name, labels in keys:
        labelled = dict(labels) | {"job": JOB, "instance": instance, "namespace": INSTALL}
        selector = name + "{" + ",".join(f"{k}={_quoted(v)}" for k, v in sorted(labelled.items())) + "}"
        parts = []
        for samples, minutes in timeline:
            sample = samples.get((name, labels))
            parts.append(f"{'_' if sample is None else _number(sample)}x{minutes - 1}")
        out.append({"series": selector, "values": " ".join(parts)})
    total = sum(minutes for _, minutes in timeline)
    up = f'up{{instance="{instance}",job="{JOB}",namespace="{INSTALL}"}}'
    out.append({"series": up, "values": f"1x{total - 1}"})
    return out


def fired(rule: Mapping[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """The alert as promtool should report it: its labels, its annotations with ``$labels`` filled."""
    annotations = {key: re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m[1]], text)
                   for key, text in rule["annotations"].items()}
    assert not any("$value" in text for text in annotations.values()), rule["alert"]
    return {"exp_labels": {**labels, **rule["labels"]}, "exp_annotations": annotations}


def add_cluster(server: APIServer, name: str, cpu: int) -> None:
    doc = cpu_cluster(name, cpu)
    server.request("POST", CLUSTERS, {k: v for k, v in doc.items() if k != "status"})
    server.request("PATCH", f"{CLUSTERS}/{name}/status", {"status": doc["status"]}, content_type=MERGE)


def bindings(server: APIServer) -> list[dict[str, Any]]:
    return list(server.request("GET", RB_NS.format(ns=NAMESPACE))["items"])  # type: ignore[arg-type]


def test_unscheduled_bindings_fire_the_unschedulable_alert_from_the_scrapes(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess], tmp_path: Path
) -> None:
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    add_cluster(server, "small", 1)
    proc = start_scheduler(server, "--leader-elect=false", name="unscheduled")
    before = scrape(proc)
    assert {reason: value(before, GAUGE, reason=reason) for reason in
            ("NoClusterFit", "Unschedulable", "QuotaExceeded", "SchedulerError")} == dict.fromkeys(
        ("NoClusterFit", "Unschedulable", "QuotaExceeded", "SchedulerError"), 0.0)  # there from the start

    no_fit = [cpu_binding(f"nowhere-{i}", NAMESPACE, 2, 1, ["no-such-cluster"]) for i in range(NO_FIT)]
    short = [cpu_binding(f"short-{i}", NAMESPACE, 10, 1, ["small"]) for i in range(SHORT)]
    create_all(str(server.kubeconfig), [*no_fit, *short])
    wait_until(lambda: len(tally(bindings(server)).failed) == NO_FIT + SHORT, timeout=60,
               message=proc.log_tail)
    reasons = {b["metadata"]["name"]: c["reason"] for b in bindings(server)
               for c in b["status"]["conditions"] if c["type"] == "Scheduled"}
    assert sorted(reasons.values()) == sorted(["NoClusterFit"] * NO_FIT + ["Unschedulable"] * SHORT)
    # the condition is cached before the attempt is counted and the key parked: one scrape with all
    unscheduled = wait_until(lambda: settled(scrape(proc), {
        (GAUGE, "reason", "NoClusterFit"): NO_FIT, (GAUGE, "reason", "Unschedulable"): SHORT,
        ("scheduler_pending_bindings", "queue", "unschedulable"): SHORT}), timeout=30, message=proc.log_tail)
    assert value(unscheduled, GAUGE, reason="NoClusterFit") == NO_FIT
    assert value(unscheduled, GAUGE, reason="Unschedulable") == SHORT
    assert value(unscheduled, GAUGE, reason="SchedulerError") == 0
    assert value(unscheduled, GAUGE, reason="QuotaExceeded") == 0
    # Karmada's series keep Karmada's meaning: a NoClusterFit attempt is "scheduled" and is not
    # retried from the queue; an Unschedulable one is "error" and waits in the unschedulable queue
    # (one attempt each so far; a NoClusterFit one counted "error" would never reach these)
    wait_until(lambda: settled(scrape(proc), {(ATTEMPTS, "result", "scheduled"): NO_FIT,
                                              (ATTEMPTS, "result", "error"): SHORT}),
               timeout=30, message=proc.log_tail)
    assert value(unscheduled, "scheduler_pending_bindings", queue="unschedulable") == SHORT

    # one NoClusterFit binding deleted, room for the short ones reported: they leave the series
    server.request("DELETE", f"{RB_NS.format(ns=NAMESPACE)}/nowhere-0")
    room = {"status": {"resourceSummary": {"allocatable": {"cpu": "100", "pods": "1000"}}}}
    server.request("PATCH", f"{CLUSTERS}/small/status", room, content_type=MERGE)
    wait_until(lambda: len(tally(bindings(server)).scheduled) == SHORT, timeout=60, message=proc.log_tail)
    after = wait_until(lambda: settled(scrape(proc), {
        (GAUGE, "reason", "NoClusterFit"): NO_FIT - 1, (GAUGE, "reason", "Unschedulable"): 0}),
        timeout=30, message=proc.log_tail)
    assert value(after, GAUGE, reason="Unschedulable") == 0
    assert value(after, GAUGE, reason="NoClusterFit") == NO_FIT - 1

    rules = yaml.safe_load(RULES.read_text())["spec"]
    alerts = [r for group in rules["groups"] for r in group["rules"] if "alert" in r]
    (unschedulable,) = [r for r in alerts if r["alert"] == "FleetschedBindingsUnschedulable"]
    instance = f"127.0.0.1:{proc.port}"
    timeline = [(before, BEFORE), (unscheduled, UNSCHEDULED), (after, AFTER)]
    both = [fired(unschedulable, {"namespace": INSTALL, "reason": reason})
            for reason in ("NoClusterFit", "Unschedulable")]
    checks = [
        # firing 30 minutes after the bindings were first seen unscheduled, not before
        (f"{BEFORE + 25}m", "FleetschedBindingsUnschedulable", []),
        (f"{BEFORE + 35}m", "FleetschedBindingsUnschedulable", both),
        # the short bindings scheduled: only the NoClusterFit ones still fire
        (f"{BEFORE + UNSCHEDULED + 5}m", "FleetschedBindingsUnschedulable", both[:1]),
    ]
    # every other alert stays quiet on this run: a healthy scheduler whose bindings no cluster fits
    checks += [(f"{BEFORE + 35}m", r["alert"], []) for r in alerts if r["alert"] != unschedulable["alert"]]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    case = {
        "interval": "1m",
        "input_series": input_series(timeline, instance),
        "alert_rule_test": [{"eval_time": at, "alertname": name, "exp_alerts": exp}
                            for at, name, exp in checks],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "tests": [case]}))
    done = subprocess.run(["promtool", "test", "rules", "test.yaml"], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
    # and the check is a real one: the same series with the alert's reasons left out do not fire it
    quiet = [s for s in case["input_series"] if not (s["series"].startswith(GAUGE) and "SchedulerError" not in
                                                   s["series"] and "QuotaExceeded" not in s["series"])]
    (tmp_path / "quiet.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "tests": [
        {**case, "input_series": quiet, "alert_rule_test": case["alert_rule_test"][1:2]}]}))
    refuted = subprocess.run(["promtool", "test", "rules", "quiet.yaml"], capture_output=True, text=True,
                             timeout=300, cwd=tmp_path)
    assert refuted.returncode != 0 and "FleetschedBindingsUnschedulable" in refuted.stdout + refuted.stderr
