"""Ordered clusterAffinities on a live control plane (spec/scheduler.md §3.7, Example 9).

The binding lands in the first group that fits and the group is recorded in
``status.schedulerObservingAffinityName``; when that group stops fitting (its cluster is evicted)
the binding moves on to the next group; an operator restart keeps the recorded group, so a later
scale-up stays there; only an explicit reschedule goes back to the first group.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable
from typing import Any

from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import apply_with_status, as_applied, binding_state, get_json, ready_cluster
from tests.support.processes import SchedulerProcess

NAMESPACE = "groups"


def cluster(name: str, pods: int) -> dict[str, Any]:
    return ready_cluster(name, pods)


def binding(name: str, replicas: int) -> dict[str, Any]:
    return as_applied(
        {
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "resource": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "namespace": NAMESPACE,
                    "name": name,
                    "uid": "6b1e2a9c-0000-4000-8000-000000000001",
                },
                "replicas": replicas,
                "placement": {
                    "clusterAffinities": [
                        {"affinityName": "primary", "clusterNames": ["m1"]},
                        {"affinityName": "backup", "clusterNames": ["m2", "m3"]},
                    ],
                    "replicaScheduling": {
                        "replicaSchedulingType": "Divided",
                        "replicaDivisionPreference": "Weighted",
                        "weightPreference": {"dynamicWeight": "AvailableReplicas"},
                    },
                },
            },
        }
    )


def state(server: APIServer, name: str) -> dict[str, Any]:
    return binding_state(get_json(server, "rb", "-n", NAMESPACE, name))


def wait_state(
    server: APIServer, name: str, check: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    return wait_until(
        lambda: (s := state(server, name)) and check(s) and s,
        timeout=40,
        message=lambda: f"{what}; binding is {state(server, name)}",
    )


def patch_spec(server: APIServer, name: str, spec: dict[str, Any]) -> None:
    server.kubectl("patch", "rb", name, "-n", NAMESPACE, "--type=merge", "-p", json.dumps({"spec": spec}))


def test_groups_fail_over_in_order_and_survive_a_restart(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    apply_with_status(server, [cluster("m1", 10), cluster("m2", 6), cluster("m3", 2)])
    first = start_scheduler(server, "--leader-elect=false", name="first")
    apply_with_status(server, [binding("web", 4)])

    # 1. The first group fits: all replicas on m1, the group's name recorded.
    placed = wait_state(server, "web", lambda s: s["scheduled"], "never scheduled")
    assert placed == {
        "scheduled": True,
        "reason": "Success",
        "affinityName": "primary",
        "clusters": {"m1": 4},
    }

    # 2. m1 fails and the taint manager evicts the workload (targets cleared, eviction task added):
    #    the observed group no longer fits, so the binding moves to the next group (4 split 6:2).
    patch_spec(
        server,
        "web",
        {
            "clusters": None,
            "gracefulEvictionTasks": [
                {"fromCluster": "m1", "reason": "TaintUntolerated", "producer": "TaintManager"}
            ],
        },
    )
    moved = wait_state(server, "web", lambda s: s["affinityName"] == "backup", "never moved to backup")
    assert moved == {
        "scheduled": True,
        "reason": "Success",
        "affinityName": "backup",
        "clusters": {"m2": 3, "m3": 1},
    }
    events = server.kubectl(
        "get",
        "events",
        "-n",
        NAMESPACE,
        "--field-selector",
        "involvedObject.name=web",
        "-o",
        "jsonpath={range .items[*]}{.reason}|{.message}{'\\n'}{end}",
    )
    assert (
        "ScheduleBindingFailed|failed to schedule ResourceBinding(groups/web) with clusterAffiliates index(0)"
        in events
    )
    assert "ScheduleBindingSucceed|Binding has been scheduled successfully. Result: {m2:3, m3:1}" in events
    # The fallback Warning goes on the template too, as Karmada's; the source is the program's name.
    by_kind = server.kubectl(
        "get",
        "events",
        "-n",
        NAMESPACE,
        "--field-selector",
        "involvedObject.name=web,reason=ScheduleBindingFailed",
        "-o",
        "jsonpath={range .items[*]}{.involvedObject.kind}|{.source.component}|{.reportingComponent}|"
        "{.message}{'\\n'}{end}",
    )
    fallback = "with clusterAffiliates index(0)"
    kinds = {line.split("|")[0] for line in by_kind.splitlines() if fallback in line}
    assert kinds == {"ResourceBinding", "Deployment"}, by_kind
    assert all(
        line.split("|")[1:3] == ["fleetsched-scheduler", "fleetsched-scheduler"]
        for line in by_kind.splitlines()
    ), by_kind

    # 3. Restart the operator while m1 recovers (its eviction task goes away).
    assert first.stop() == 0
    patch_spec(server, "web", {"gracefulEvictionTasks": None})
    start_scheduler(server, "--leader-elect=false", name="second")
    # A scale-up starts from the recorded group: it stays on backup although primary fits again.
    patch_spec(server, "web", {"replicas": 6})
    scaled = wait_state(server, "web", lambda s: sum(s["clusters"].values()) == 6, "scale-up not scheduled")
    assert scaled["affinityName"] == "backup"
    assert set(scaled["clusters"]) <= {"m2", "m3"}
    obj = get_json(server, "rb", "-n", NAMESPACE, "web")
    assert obj["status"]["schedulerObservedGeneration"] == obj["metadata"]["generation"]

    # 4. Only an explicit reschedule (newer than lastScheduledTime) starts from the first group.
    time.sleep(1.1)  # both times have one-second precision
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    patch_spec(server, "web", {"rescheduleTriggeredAt": now})
    back = wait_state(server, "web", lambda s: s["affinityName"] == "primary", "reschedule did not go back")
    assert back["clusters"] == {"m1": 6}
