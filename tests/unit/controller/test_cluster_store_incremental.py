"""The incremental cluster snapshot equals one built from scratch, and schedules identically.

A differential property test: any sequence of Cluster watch events (new Clusters, status heartbeats,
label and taint changes, deletion marks, malformed objects, late and repeated events, deletes), with
snapshots taken now and then (so several changes fold into one). After each, the ``ClusterStore``
fed event by event, which replaces changed entries in place (``Snapshot.replaced``), must hold the
same clusters as a fresh store fed only the current objects; and a long-lived scheduler (whose
memos, estimator tables and outcome memo follow the incremental snapshots) must give the same
results as a cold one on the fresh snapshot.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fleetsched.controller.runtime.cache import ClusterStore
from fleetsched.scheduler import general_estimator as general
from fleetsched.scheduler.convert import binding_from_dict, status_from_dict
from fleetsched.scheduler.outcome import ScheduleResult
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo

EXAMPLES = int(os.environ.get("STORE_EXAMPLES", "80"))
NAMES = [f"m{i}" for i in range(6)]


@st.composite
def cluster_objects(draw: st.DrawFn, name: str) -> dict[str, Any]:
    """A Cluster as the API serves it (without resourceVersion: the events give it one)."""
    meta: dict[str, Any] = {"name": name, "labels": {"tier": draw(st.sampled_from(["gold", "silver"]))}}
    if draw(st.integers(0, 7)) == 0:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {"region": draw(st.sampled_from(["r1", "r2"]))}
    if draw(st.integers(0, 4)) == 0:
        spec["taints"] = [{"key": "dedicated", "effect": "NoSchedule"}]
    if draw(st.integers(0, 9)) == 0:
        spec["taints"] = "not a list"  # malformed: left out of the snapshot
    cpu = draw(st.integers(0, 64))
    status: dict[str, Any] = {
        "apiEnablements": [
            {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}
        ],
        "resourceSummary": {
            "allocatable": {"cpu": str(cpu), "memory": "64Gi", "pods": str(draw(st.integers(0, 40)))},
            "allocated": {
                "cpu": f"{draw(st.integers(0, 1000 * cpu))}m",
                "pods": str(draw(st.integers(0, 20))),
            },
        },
    }
    if draw(st.integers(0, 5)) == 0:
        del status["apiEnablements"]
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": meta,
        "spec": spec,
        "status": status,
    }


def heartbeat(obj: dict[str, Any], allocated_pods: int) -> dict[str, Any]:
    """The same Cluster after a status update: only resourceSummary.allocated moved."""
    beat = {**obj, "status": {**obj["status"]}}
    summary = dict(beat["status"]["resourceSummary"])
    summary["allocated"] = {**summary["allocated"], "pods": str(allocated_pods)}
    beat["status"]["resourceSummary"] = summary
    return beat


@st.composite
def events(draw: st.DrawFn) -> list[tuple[str, str, Any]]:
    """(kind, cluster name, payload) steps after the first Clusters were created; "snapshot" steps
    schedule and compare."""
    first = draw(st.lists(st.sampled_from(NAMES), min_size=1, unique=True))
    out: list[tuple[str, str, Any]] = [("new", name, draw(cluster_objects(name))) for name in first]
    out.append(("snapshot", "", None))
    kinds = ["beat"] * 4 + ["new"] * 2 + ["deleting", "stale", "same", "delete", "snapshot", "snapshot"]
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(kinds))
        name = draw(st.sampled_from(NAMES))
        if kind == "new":
            out.append((kind, name, draw(cluster_objects(name))))
        elif kind == "beat":
            out.append((kind, name, draw(st.integers(0, 30))))
        else:
            out.append((kind, name, None))
    out.append(("snapshot", "", None))
    return out


@st.composite
def some_binding(draw: st.DrawFn) -> dict[str, Any]:
    """A ResourceBinding of a Deployment as the API serves it, with the usual placements."""
    divided = {"replicaSchedulingType": "Divided"}
    scheduling = draw(
        st.sampled_from(
            [
                {"replicaSchedulingType": "Duplicated"},
                {**divided, "replicaDivisionPreference": "Aggregated"},
                {**divided, "replicaDivisionPreference": "Weighted",
                 "weightPreference": {"dynamicWeight": "AvailableReplicas"}},
                {**divided, "replicaDivisionPreference": "Weighted"},
            ]
        )
    )
    placement: dict[str, Any] = {"replicaScheduling": scheduling}
    if draw(st.booleans()):
        placement["clusterTolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    if draw(st.integers(0, 2)) == 0:
        tier = draw(st.sampled_from(["gold", "silver"]))
        placement["clusterAffinity"] = {"labelSelector": {"matchLabels": {"tier": tier}}}
    if draw(st.integers(0, 3)) == 0:
        placement["spreadConstraints"] = [{"spreadByField": "region", "minGroups": 1, "maxGroups": 2}]
    cpu = draw(st.sampled_from(["100m", "1", "3"]))
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "b", "namespace": "default"},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "b"},
            "replicas": draw(st.integers(0, 12)),
            "replicaRequirements": {"resourceRequest": {"cpu": cpu}},
            "placement": placement,
        },
    }


def _fields(c: ClusterInfo) -> dict[str, Any]:
    return {f.name: getattr(c, f.name) for f in dataclasses.fields(c) if f.name != "memo"}


def _observable(result: ScheduleResult) -> tuple[object, ...]:
    return (
        result.condition,
        result.clusters,
        result.affinity_name,
        tuple((a.summary, a.verdicts, a.numbers, a.selected, a.error) for a in result.attempts),
    )


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events(), st.lists(some_binding(), min_size=1, max_size=3), st.booleans())
def test_the_incremental_snapshot_equals_a_fresh_one_and_schedules_the_same(
    steps: list[tuple[str, str, Any]], raw_bindings: list[dict[str, Any]], vectorised: bool
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        if vectorised:  # the estimator's tables for these few clusters too
            mp.setattr(general, "VECTOR_MIN", 1)
        _incremental_equals_fresh(steps, raw_bindings)


def _incremental_equals_fresh(steps: list[tuple[str, str, Any]], raw_bindings: list[dict[str, Any]]) -> None:
    bindings = [(binding_from_dict(b), status_from_dict(b)) for b in raw_bindings]
    store = ClusterStore()
    warm = Scheduler()
    current: dict[str, dict[str, Any]] = {}
    version = 0
    snapshots: list[Snapshot] = []
    for kind, name, payload in steps:
        if kind == "new" or (kind in ("beat", "deleting") and name in current):
            version += 1
            if kind == "new":
                base = payload
            elif kind == "beat":
                base = heartbeat(current[name], payload)
            else:  # deletion starts (or, for the test's sake, is taken back)
                meta = dict(current[name]["metadata"])
                if meta.pop("deletionTimestamp", None) is None:
                    meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
                base = {**current[name], "metadata": meta}
            obj = {**base, "metadata": {**base["metadata"], "resourceVersion": str(version)}}
            current[name] = obj
            store.upsert(obj)
        elif kind == "stale" and name in current:  # a late watch event: an older copy, ignored
            old = current[name]
            store.upsert({**old, "metadata": {**old["metadata"], "resourceVersion": "0"}})
        elif kind == "same" and name in current:  # a relist: the same version again
            store.upsert(current[name])
        elif kind == "delete" and name in current:
            del current[name]
            store.delete(name)
        elif kind == "snapshot":
            incremental = store.snapshot()
            assert store.snapshot() is incremental  # shared until the next change
            fresh_store = ClusterStore()
            for obj in current.values():
                fresh_store.upsert(obj)
            fresh = fresh_store.snapshot()
            assert incremental.names == fresh.names
            assert [_fields(c) for c in incremental.clusters] == [_fields(c) for c in fresh.clusters]
            assert incremental.deleting_index() == fresh.deleting_index()
            assert incremental.live_index() == fresh.live_index()
            assert incremental.base_verdicts() == fresh.base_verdicts()
            assert store.terminating() == fresh_store.terminating()
            if snapshots and incremental is not snapshots[-1] and incremental.parent is not None:
                # Derived in place: the clusters that did not change are the very same objects.
                parent = snapshots[-1]
                assert incremental.parent[0] == parent.generation
                changed = set(incremental.parent[1])
                assert all(
                    incremental.clusters[i] is parent.clusters[i]
                    for i in range(len(parent.clusters))
                    if i not in changed
                )
            if not snapshots or incremental is not snapshots[-1]:
                event("derived in place" if incremental.parent is not None else "built afresh")
            snapshots.append(incremental)
            for binding, status in bindings:
                cold = Scheduler().schedule(binding, status, fresh)
                assert _observable(warm.schedule(binding, status, incremental)) == _observable(cold)


def test_a_heartbeat_replaces_one_entry_and_keeps_the_others() -> None:
    store = ClusterStore()
    for i, name in enumerate(NAMES):
        store.upsert(
            {
                "metadata": {"name": name, "resourceVersion": str(i + 1)},
                "status": {"resourceSummary": {"allocatable": {"pods": "10"}}},
            }
        )
    first = store.snapshot()
    beat = {
        "metadata": {"name": "m2", "resourceVersion": "20"},
        "status": {"resourceSummary": {"allocatable": {"pods": "10"}, "allocated": {"pods": "4"}}},
    }
    store.upsert(beat)
    second = store.snapshot()
    assert second is not first and second.names is first.names
    assert second.parent == (first.generation, (2,))
    assert [c is d for c, d in zip(first.clusters, second.clusters, strict=True)] == [
        True, True, False, True, True, True
    ]
    summary = second.clusters[2].resource_summary
    assert summary is not None and summary.allocated["pods"].value() == 4
    # A new Cluster changes the list: built afresh (sorted by name), unchanged entries reused.
    store.upsert({"metadata": {"name": "a0", "resourceVersion": "21"}})
    third = store.snapshot()
    assert third.parent is None and third.names == ("a0", *NAMES)
    assert third.clusters[3] is second.clusters[2]
