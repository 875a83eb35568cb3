"""The assume record (scheduler/assume.py) and its derivation from watched bindings
(controller/scheduler/assume/feed.py): Karmada's cache semantics, Reserve under concurrency, and the record
derived from binding versions equal to the one Karmada's scheduler keeps in memory."""

from __future__ import annotations

import copy
import datetime as dt
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetsched.api.quantity import parse_quantity
from fleetsched.controller.scheduler.assume import feed as assumptions
from fleetsched.scheduler.assume import AssumeRecord, Release, describe, footprint, newly_healthy
from fleetsched.scheduler.general_estimator import GeneralEstimator
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import (
    AssumedLoad,
    AssumedWorkload,
    ClusterInfo,
    Component,
    ObjectReference,
    ReplicaRequirements,
    ResourceSummary,
    SchedulingBinding,
    TargetCluster,
)

EXAMPLES = 200 if os.environ.get("CI") else 100
PROFILE = settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
ONE_CPU = ReplicaRequirements(resource_request=(("cpu", parse_quantity("1")),))


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _binding(name: str, replicas: int = 10, kind: str = "ResourceBinding") -> SchedulingBinding:
    return SchedulingBinding(
        kind=kind,
        name=name,
        namespace="ns",
        resource=ObjectReference("apps/v1", "Deployment", "ns", name),
        replicas=replicas,
        replica_requirements=ONE_CPU,
    )


def _workload(name: str, replicas: int) -> AssumedWorkload:
    return AssumedWorkload(
        "ns", (Component(name, replicas, ReplicaRequirements(resource_request=ONE_CPU.resource_request)),)
    )


def _cluster(name: str, cpu: int = 100) -> ClusterInfo:
    summary = ResourceSummary(
        allocatable={"cpu": parse_quantity(str(cpu)), "pods": parse_quantity("1000")},
        allocated={},
        allocating={},
    )
    return ClusterInfo(name=name, resource_summary=summary)


def assert_load_is_the_sum(record: AssumeRecord, cluster: str) -> None:
    """The running per-cluster sum the estimators read equals the sum of the workloads held."""
    kept, summed = record.load(cluster), AssumedLoad.of(record.workloads(cluster))
    assert kept.pods == summed.pods and kept.set_pods == summed.set_pods
    assert {k: v for k, v in kept.resources.items() if v} == {k: v for k, v in summed.resources.items() if v}
    assert {k: v for k, v in kept.set_units.items() if v} == {k: v for k, v in summed.set_units.items() if v}


# ---- Karmada's semantics ----------------------------------------------------------------------------


def test_footprint_is_karmadas_synthetic_component_per_cluster() -> None:
    fp = footprint(_binding("web"), (TargetCluster("m1", 6), TargetCluster("m2", 4)))
    assert fp == {"m1": _workload("web", 6), "m2": _workload("web", 4)}
    assert footprint(_binding("crb", kind="ClusterResourceBinding"), (TargetCluster("m1", 1),)) == {}
    config = SchedulingBinding(kind="ResourceBinding", name="cm", namespace="ns")
    assert not config.is_workload() and footprint(config, (TargetCluster("m1", 0),)) == {}
    parts = (Component("a", 2), Component("b", 1))
    multi = SchedulingBinding(
        kind="ResourceBinding",
        name="m",
        namespace="ns",
        resource=ObjectReference(namespace="ns", name="m"),
        components=parts,
    )
    assert footprint(multi, (TargetCluster("m1"),)) == {"m1": AssumedWorkload("ns", parts)}


def test_reschedule_replaces_releases_left_clusters_and_restarts_the_ttl() -> None:
    clock, released = Clock(), []
    record = AssumeRecord(300, clock=clock, on_release=lambda reason, n: released.append((reason, n)))
    record.observe_schedule("ns/web", {"m1": _workload("web", 6), "m2": _workload("web", 4)})
    clock.now += 200
    record.observe_schedule("ns/web", {"m1": _workload("web", 10)}, left=["m2"])
    assert record.workloads("m1") == (_workload("web", 10),) and record.workloads("m2") == ()
    assert released == [(Release.RESCHEDULED, 1)]
    clock.now += 200  # 400 s after the first, 200 after the reschedule: still held
    assert record.workloads("m1") == (_workload("web", 10),)
    clock.now += 101
    assert record.workloads("m1") == ()
    assert released[-1] == (Release.EXPIRED, 1)


def test_healthy_deleted_and_expiry_release() -> None:
    clock = Clock()
    record = AssumeRecord(60, clock=clock)
    record.observe_schedule("ns/a", {"m1": _workload("a", 1), "m2": _workload("a", 2)})
    record.observe_schedule("ns/b", {"m1": _workload("b", 3)})
    assert newly_healthy([("m1", False), ("m2", True)], [("m1", True), ("m2", True)]) == ["m1"]
    assert record.release_healthy("ns/a", ["m1"]) == 1
    assert record.workloads("m1") == (_workload("b", 3),)
    assert record.release("ns/a") == 1 and record.workloads("m2") == ()
    clock.now += 61
    assert record.expire() == 1 and len(record) == 0


def test_overlay_lays_assumptions_over_the_snapshot_and_follows_changes() -> None:
    record = AssumeRecord(300, clock=Clock())
    snapshot = Snapshot([_cluster("m1"), _cluster("m2")])
    assert record.overlay(snapshot) is snapshot
    record.observe_schedule("ns/a", {"m1": _workload("a", 30)})
    first = record.overlay(snapshot)
    assert first.clusters[0].assumed == (_workload("a", 30),) and first.clusters[1] is snapshot.clusters[1]
    assert GeneralEstimator().max_available_replicas(first.clusters, ONE_CPU) == [70, 100]
    assert record.overlay(snapshot) is first  # nothing changed: the same snapshot
    record.release("ns/a")
    second = record.overlay(snapshot)
    assert second.clusters[0] is snapshot.clusters[0]
    message = describe(record, ["m1"])
    assert message is None
    record.observe_schedule("ns/b", {"m2": _workload("b", 5)})
    assert "cpu 5" in (describe(record, ["m1", "m2"]) or "") and "assumed" in (describe(record, ["m2"]) or "")


# ---- Reserve under concurrency ------------------------------------------------------------------------


@PROFILE
@given(
    plan=st.lists(
        st.tuples(st.integers(0, 5), st.sampled_from(["decide", "reserve", "unreserve"]), st.integers(0, 2)),
        min_size=1,
        max_size=60,
    )
)
def test_no_interleaving_of_decisions_overcommits(plan: list[tuple[int, str, int]]) -> None:
    """Six workers decide bindings against the record as they find it (taking what the estimate
    allows on a cluster), then reserve, possibly much later, or give a reservation back: whatever
    the interleaving, what the record holds never exceeds a cluster's capacity."""
    record = AssumeRecord(300, clock=Clock())
    clusters = [_cluster(f"m{i}", cpu=20) for i in range(3)]
    estimator = GeneralEstimator()
    decided: dict[int, tuple[int, str, int]] = {}  # worker -> (version, cluster, replicas)
    reserved: list[Any] = []
    serial = 0

    def free(name: str) -> int:
        info = record.overlaid(clusters[int(name[1:])])
        return estimator.max_available_replicas([info], ONE_CPU)[0]

    for worker, step, target in plan:
        name = f"m{target}"
        if step == "decide":
            want = min(free(name), 7)
            if want > 0:
                decided[worker] = (record.version, name, want)
        elif step == "reserve" and worker in decided:
            version, name, want = decided.pop(worker)
            serial += 1
            key = f"ns/b{serial}"
            got = record.reserve(
                key, {name: _workload(key, want)}, against=version, fits=lambda c, want=want: want <= free(c)
            )
            if got is not None:
                reserved.append(got)
        elif step == "unreserve" and reserved:
            record.unreserve(reserved.pop(target % len(reserved)))
        for c in clusters:
            held = sum(w.components[0].replicas for w in record.workloads(c.name))
            assert held <= 20, f"{c.name} holds {held} of 20"
            assert_load_is_the_sum(record, c.name)


def test_unreserve_restores_what_the_reservation_replaced_unless_a_write_replaced_it() -> None:
    record = AssumeRecord(300, clock=Clock())
    record.observe_schedule("ns/a", {"m1": _workload("a", 5)})
    got = record.reserve(
        "ns/a", {"m2": _workload("a", 5)}, left=["m1"], against=record.version, fits=lambda c: True
    )
    assert got is not None and record.workloads("m1") == () and record.workloads("m2") == (_workload("a", 5),)
    record.unreserve(got)
    assert record.workloads("m1") == (_workload("a", 5),) and record.workloads("m2") == ()
    again = record.reserve(
        "ns/a", {"m3": _workload("a", 5)}, left=["m1"], against=record.version, fits=lambda c: True
    )
    assert again is not None
    record.observe_schedule("ns/a", {"m3": _workload("a", 5)})  # the write's answer arrived
    record.unreserve(again)  # e.g. the status write failed afterwards: the placement stands
    assert record.workloads("m3") == (_workload("a", 5),)


def test_reserve_rechecks_only_clusters_changed_since_the_decision() -> None:
    record = AssumeRecord(300, clock=Clock())
    seen = record.version
    record.observe_schedule("ns/x", {"m2": _workload("x", 1)})
    checked: list[str] = []

    def fits(cluster: str) -> bool:
        checked.append(cluster)
        return False

    assert record.reserve("ns/a", {"m1": _workload("a", 1)}, against=seen, fits=fits) is not None
    assert checked == []
    assert record.reserve("ns/b", {"m2": _workload("b", 1)}, against=seen, fits=fits) is None
    assert checked == ["m2"] and not record.holds("ns/b")


# ---- the record derived from watched bindings ----------------------------------------------------------

CLUSTERS = ("m1", "m2", "m3")


def _object(
    name: str,
    targets: dict[str, int],
    healthy: set[str],
    scheduled_at: float | None,
    evicting: tuple[str, ...] = (),
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "aggregatedStatus": [
            {"clusterName": c, "health": "Healthy" if c in healthy else "Unhealthy"} for c in sorted(targets)
        ],
    }
    if scheduled_at is not None:
        status["lastScheduledTime"] = dt.datetime.fromtimestamp(scheduled_at, dt.UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
    spec: dict[str, Any] = {
        "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": name},
        "replicas": sum(targets.values()),
        "replicaRequirements": {"resourceRequest": {"cpu": "1"}},
        "placement": {"clusterAffinity": {"clusterNames": list(CLUSTERS)}},
        "clusters": [{"name": c, "replicas": r} for c, r in targets.items()],
    }
    if evicting:
        spec["gracefulEvictionTasks"] = [{"fromCluster": c} for c in evicting]
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"namespace": "ns", "name": name, "uid": f"uid-{name}", "generation": 1},
        "spec": spec,
        "status": status,
    }


events = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.sampled_from(["schedule", "healthy", "unhealthy", "delete", "wait"]),
        st.dictionaries(st.sampled_from(CLUSTERS), st.integers(0, 5), min_size=1, max_size=3),
    ),
    max_size=25,
)


@PROFILE
@given(sequence=events)
def test_the_derived_record_equals_karmadas_in_memory_record(sequence: list[Any]) -> None:
    """Karmada's scheduler records its own patches (updateAssumptionsCache with the old binding),
    releases on Healthy transitions and on delete; a replica that only watches the same versions
    reaches the same record after every event."""
    clock = Clock()
    karmada = AssumeRecord(300, clock=clock)
    derived = AssumeRecord(300, clock=clock)
    objects: dict[str, dict[str, Any]] = {}
    for name, event, targets in sequence:
        key = f"ns/{name}"
        old = objects.get(name)
        if event == "wait":
            clock.now += 120
            continue
        if event == "delete":
            if old is not None:
                karmada.release(key, Release.DELETED)
                assumptions.forget(derived, "ResourceBinding", old)
                del objects[name]
        elif event == "schedule":
            new = _object(name, targets, set(), clock.now)
            old_targets = {
                t["name"]: t["replicas"] for t in (old or {"spec": {}})["spec"].get("clusters", [])
            }
            if old_targets != targets:
                binding = SchedulingBinding(
                    kind="ResourceBinding",
                    name=name,
                    namespace="ns",
                    resource=ObjectReference("apps/v1", "Deployment", "ns", name),
                    replicas=sum(targets.values()),
                    replica_requirements=ONE_CPU,
                )
                karmada.observe_schedule(
                    key,
                    footprint(binding, [TargetCluster(c, r) for c, r in targets.items()]),
                    left=[c for c in old_targets if c not in targets],
                )
            assumptions.observe(derived, "ResourceBinding", old, new)
            objects[name] = new
        elif old is not None:
            current = {t["name"]: t["replicas"] for t in old["spec"]["clusters"]}
            healthy = {
                i["clusterName"] for i in old["status"]["aggregatedStatus"] if i["health"] == "Healthy"
            }
            chosen = set(targets) & set(current)
            now_healthy = healthy | chosen if event == "healthy" else healthy - chosen
            new = copy.deepcopy(old)
            new["status"]["aggregatedStatus"] = [
                {"clusterName": c, "health": "Healthy" if c in now_healthy else "Unhealthy"}
                for c in sorted(current)
            ]
            karmada.release_healthy(key, sorted(now_healthy - healthy))
            assumptions.observe(derived, "ResourceBinding", old, new)
            objects[name] = new
        assert derived.bindings() == karmada.bindings()
        for cluster in CLUSTERS:
            assert_load_is_the_sum(derived, cluster)


def test_a_new_replica_derives_in_flight_placements_from_what_it_lists() -> None:
    clock = Clock()
    record = AssumeRecord(300, clock=clock)
    recent = _object("a", {"m1": 4, "m2": 6}, {"m2"}, clock.now - 10)
    old = _object("b", {"m1": 4}, set(), clock.now - 400)
    unscheduled = _object("c", {}, set(), None)
    for obj in (recent, old, unscheduled):
        assumptions.observe(record, "ResourceBinding", None, obj)
    # m2 already reports Healthy; b was scheduled longer ago than the TTL
    assert record.bindings() == {
        "ns/a": {
            "m1": AssumedWorkload(
                "ns", (Component("a", 4, ReplicaRequirements(resource_request=ONE_CPU.resource_request)),)
            )
        }
    }
    clock.now += 291
    assert record.bindings() == {}


def test_a_graceful_eviction_only_releases_the_evicted_cluster() -> None:
    record = AssumeRecord(300, clock=Clock())
    before = _object("a", {"m1": 4, "m2": 6}, set(), 1_000_000.0)
    assumptions.observe(record, "ResourceBinding", None, before)
    version = record.version
    after = _object("a", {"m2": 6}, set(), 1_000_000.0, evicting=("m1",))
    assumptions.observe(record, "ResourceBinding", before, after)
    assert set(record.bindings()["ns/a"]) == {"m2"} and record.version > version
