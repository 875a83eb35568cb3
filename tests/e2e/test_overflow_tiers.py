"""Overflow tiers on a live control plane (spec/scheduler.md §10, Example 8).

Raising replicas fills the primary tier up to its capacity before the overflow tier; lowering
them empties the last tier first. Capacity comes from each Cluster's ``status.resourceSummary``,
changed through the status subresource between steps (a status-only change enqueues nothing; the
replica change does).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import apply_with_status, as_applied, binding_state, get_json, patch_status
from tests.support.processes import SchedulerProcess

NAMESPACE = "tiers"


def cluster(name: str, free_pods: int) -> dict[str, Any]:
    return as_applied(
        {
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": name},
            "spec": {},
            "status": cluster_status(free_pods),
        }
    )


def cluster_status(free_pods: int) -> dict[str, Any]:
    return {
        "apiEnablements": [
            {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}
        ],
        "resourceSummary": {"allocatable": {"pods": str(free_pods)}},
    }


BINDING = as_applied(
    {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "burst", "namespace": NAMESPACE},
        "spec": {
            "resource": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "namespace": NAMESPACE,
                "name": "burst",
            },
            "replicas": 10,
            "placement": {
                "clusterAffinities": [
                    {
                        "affinityName": "onprem",
                        "clusterNames": ["c1"],
                        "overflowAffinities": [{"affinityName": "cloud", "clusterNames": ["c2", "c3"]}],
                    }
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


def set_free(server: APIServer, free: dict[str, int]) -> None:
    for name, pods in free.items():
        patch_status(server, cluster(name, pods), cluster_status(pods))


def scale_and_wait(server: APIServer, replicas: int) -> dict[str, Any]:
    server.kubectl(
        "patch",
        "rb",
        "burst",
        "-n",
        NAMESPACE,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"replicas": replicas}}),
    )

    def settled() -> dict[str, Any] | None:
        obj = get_json(server, "rb", "-n", NAMESPACE, "burst")
        state = binding_state(obj)
        done = (
            sum(state["clusters"].values()) == replicas
            and (obj.get("status") or {}).get("schedulerObservedGeneration") == obj["metadata"]["generation"]
        )
        return state if done else None

    return wait_until(settled, timeout=40, message=lambda: f"scale to {replicas} not scheduled")


def test_tiers_fill_in_order_and_contract_from_the_last(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    apply_with_status(server, [cluster("c1", 4), cluster("c2", 10), cluster("c3", 6)])
    start_scheduler(server, "--leader-elect=false")
    apply_with_status(server, [BINDING])

    # 10 replicas: the primary tier (c1) takes its capacity of 4, the cloud tier the other 6 (10:6).
    first = wait_until(
        lambda: (s := binding_state(get_json(server, "rb", "-n", NAMESPACE, "burst")))["scheduled"] and s,
        timeout=40,
        message="never scheduled",
    )
    assert first == {
        "scheduled": True,
        "reason": "Success",
        "affinityName": "onprem",
        "clusters": {"c1": 4, "c2": 4, "c3": 2},
    }

    # Raise to 14 while c1 is full: c1 keeps 4, the overflow tier grows by 4 (free 6:4).
    set_free(server, {"c1": 0, "c2": 6, "c3": 4})
    assert scale_and_wait(server, 14)["clusters"] == {"c1": 4, "c2": 6, "c3": 4}

    # Lower to 11: the primary tier keeps min(11, 4); only the last tier shrinks.
    set_free(server, {"c1": 0, "c2": 4, "c3": 2})
    assert scale_and_wait(server, 11)["clusters"] == {"c1": 4, "c2": 4, "c3": 3}

    # Lower to 3: everything fits in the primary tier, the overflow tier is emptied entirely.
    lowered = scale_and_wait(server, 3)
    assert lowered["clusters"] == {"c1": 3}
    assert lowered["affinityName"] == "onprem"
