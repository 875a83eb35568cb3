"""WorkloadAffinity / WorkloadAntiAffinity in the live scheduler (gate WorkloadAffinity, §5.7).

Bindings of one anti-affinity group created at once, scheduled by concurrent workers, land on
distinct clusters (a decision that passed Reserve is a peer of the next one before its write);
bindings of one affinity group follow the placed member; and on the same inputs the live result is
what ``fleetsched simulate`` computes.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import (
    apply_with_status,
    as_applied,
    binding_state,
    create_objects,
    get_json,
    ready_cluster,
)
from tests.support.processes import SchedulerProcess

NAMESPACE = "affinity"
CLUSTERS = ["m1", "m2", "m3", "m4"]
GATES = "--feature-gates=WorkloadAffinity=true"


def grouped(
    name: str,
    replicas: int,
    *,
    affinity: str = "",
    anti: str = "",
    clusters: list[str] = CLUSTERS,
    aggregated: bool = True,
) -> dict[str, Any]:
    groups = {}
    if affinity:
        groups["affinityGroup"] = affinity
    if anti:
        groups["antiAffinityGroup"] = anti
    division = (
        {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}
        if aggregated
        else {"replicaSchedulingType": "Duplicated"}
    )
    return as_applied(
        {
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding",
            # Karmada names a binding <resource>-<kind>; the plugins tell a binding from its peers so.
            "metadata": {"name": f"{name}-deployment", "namespace": NAMESPACE},
            "spec": {
                "resource": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "namespace": NAMESPACE,
                    "name": name,
                },
                "replicas": replicas,
                "workloadAffinityGroups": groups,
                "placement": {
                    "clusterAffinity": {"clusterNames": clusters},
                    "workloadAffinity": {
                        **({"affinity": {"groupByLabelKey": "app"}} if affinity else {}),
                        **({"antiAffinity": {"groupByLabelKey": "tier"}} if anti else {}),
                    },
                    "replicaScheduling": division,
                },
            },
        }
    )


def state(server: APIServer, name: str) -> dict[str, Any]:
    return binding_state(get_json(server, "rb", "-n", NAMESPACE, f"{name}-deployment"))


def wait_scheduled(server: APIServer, names: list[str]) -> dict[str, dict[str, Any]]:
    def all_done() -> dict[str, dict[str, Any]] | None:
        states = {n: state(server, n) for n in names}
        return states if all(s["reason"] for s in states.values()) else None

    return wait_until(all_done, timeout=60, message=lambda: f"not all scheduled: {names}")


def simulate(objects: list[dict[str, Any]], tmp_path: Path) -> dict[str, dict[str, int]]:
    """What `fleetsched simulate --feature-gates WorkloadAffinity=true` decides for ``objects``."""
    source = tmp_path / "inputs.yaml"
    source.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "fleetsched",
            "simulate",
            str(source),
            "-o",
            "yaml",
            "--feature-gates",
            "WorkloadAffinity=true",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode in (0, 1), out.stderr
    result: dict[str, dict[str, int]] = {}
    docs = [d for top in yaml.safe_load_all(out.stdout) if top for d in (top.get("items") or [top])]
    for doc in docs:
        if doc.get("kind") == "ResourceBinding":
            result[doc["metadata"]["name"]] = {
                c["name"]: int(c.get("replicas") or 0) for c in (doc.get("spec") or {}).get("clusters") or ()
            }
    return result


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    keep = {k: meta[k] for k in ("name", "namespace", "labels") if k in meta}
    out = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": keep,
        "spec": obj.get("spec", {}),
    }
    if obj.get("status"):
        out["status"] = obj["status"]
    return out


def test_groups_hold_under_concurrent_workers_and_match_simulate(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess], tmp_path: Path
) -> None:
    server = isolated_apiserver
    apply_with_status(server, [ready_cluster(name, 100) for name in CLUSTERS])
    server.kubectl("create", "namespace", NAMESPACE)
    scheduler = start_scheduler(server, "--leader-elect=false", "--workers=16", GATES)

    # 1. Four caches of one anti-affinity group, created at once: four distinct clusters, although
    #    every one of them alone would take the cluster with the most room.
    caches = [f"cache-{i}" for i in range(4)]
    create_objects(server, [grouped(name, 3, anti="tier=cache") for name in caches])
    placed = wait_scheduled(server, caches)
    assert all(s["scheduled"] for s in placed.values()), placed
    targets = [next(iter(s["clusters"])) for s in placed.values()]
    assert sorted(targets) == CLUSTERS, placed
    # A fifth finds no cluster left: every one already has a workload of its group.
    create_objects(server, [grouped("cache-4", 3, anti="tier=cache")])
    fifth = wait_scheduled(server, ["cache-4"])["cache-4"]
    assert not fifth["scheduled"] and fifth["reason"] == "NoClusterFit", fifth
    condition = get_json(server, "rb", "-n", NAMESPACE, "cache-4-deployment")["status"]["conditions"]
    assert any(
        "cluster already has workload with the same anti-affinity group" in c["message"] for c in condition
    )

    # 2. An affinity group follows its placed member: db is pinned to m3, web and api may go anywhere.
    create_objects(server, [grouped("db", 2, affinity="app=shop", clusters=["m3"])])
    assert wait_scheduled(server, ["db"])["db"]["clusters"] == {"m3": 2}
    create_objects(
        server, [grouped(name, 4, affinity="app=shop", aggregated=False) for name in ("web", "api")]
    )
    followers = wait_scheduled(server, ["web", "api"])
    assert followers == {
        name: {"scheduled": True, "reason": "Success", "affinityName": "", "clusters": {"m3": 4}}
        for name in ("web", "api")
    }
    assert scheduler.alive()

    # 3. On the same inputs, simulate decides what the live scheduler decided: a new member of each
    #    group against the placed ones, computed offline first, then created live.
    scheduler.stop()
    newcomers = [
        grouped("shop-cart", 2, affinity="app=shop", aggregated=False),
        grouped("cache-5", 1, anti="tier=cache", clusters=["m1", "m2"]),
    ]
    clusters = server.request("GET", "/apis/cluster.karmada.io/v1alpha1/clusters")["items"]
    bindings = server.request(
        "GET", f"/apis/work.karmada.io/v1alpha2/namespaces/{NAMESPACE}/resourcebindings"
    )
    existing = [
        _clean({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", **o}) for o in clusters
    ]
    existing += [
        _clean({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding", **o})
        for o in bindings["items"]
    ]
    offline = simulate(existing + newcomers, tmp_path)
    start_scheduler(server, "--leader-elect=false", "--workers=16", GATES, name="second")
    create_objects(server, newcomers)
    live = wait_scheduled(server, ["shop-cart", "cache-5"])
    assert live["shop-cart"]["clusters"] == offline["shop-cart-deployment"] == {"m3": 2}
    assert live["cache-5"]["clusters"] == offline["cache-5-deployment"] == {}
    assert live["cache-5"]["reason"] == "NoClusterFit"
