"""Ordered clusterAffinities (scheduler.md §3.7) with §16's example 9 and FitError handling (§3.6, §4.2)."""

from __future__ import annotations

from .builders import a_binding, a_cluster, names, term
from .conftest import Schedule, division

GROUPS = (term("primary", names("m1")), term("backup", names("m2", "m3")))
FREE = {"m1": 10, "m2": 6, "m3": 2}


def _fleet(**overrides: int):  # type: ignore[no-untyped-def]
    free = {**FREE, **overrides}
    return [a_cluster(n).free(f) for n, f in free.items()]


def test_first_schedule_uses_the_first_group(schedule: Schedule) -> None:
    result = schedule(a_binding().replicas(4).dynamic().groups(*GROUPS), _fleet())
    assert division(result) == {"m1": 4}
    assert result.affinity_name == "primary"


def test_failover_to_the_next_group_records_its_name(schedule: Schedule) -> None:
    binding = a_binding().replicas(4).dynamic().groups(*GROUPS).observing("primary").evicting("m1")
    fleet = [
        a_cluster("m1").free(10).tainted("cluster.karmada.io/not-ready", "NoSchedule"),
        a_cluster("m2").free(6),
        a_cluster("m3").free(2),
    ]
    result = schedule(binding, fleet)
    assert division(result) == {"m2": 3, "m3": 1}
    assert result.affinity_name == "backup"
    assert result.condition is not None and result.condition.reason == "Success"
    first = result.attempts[0]
    assert first.affinity_name == "primary" and first.error_reason == "NoClusterFit"
    assert first.error == (
        "0/3 clusters are available: "
        "1 cluster(s) had untolerated taint {cluster.karmada.io/not-ready:NoSchedule}, "
        "2 cluster(s) did not match the placement cluster affinity constraint."
    )


def test_earlier_groups_are_not_retried_and_the_first_error_is_reported(schedule: Schedule) -> None:
    binding = a_binding().replicas(10).dynamic().groups(*GROUPS).observing("backup").targets(m2=3, m3=1)
    result = schedule(binding, _fleet(m2=3, m3=1))
    assert result.condition is not None
    assert result.condition.reason == "Unschedulable"
    assert result.condition.message == (
        "failed to assign replicas: failed to scale up: "
        "Clusters available replicas 4 are not enough to schedule."
    )
    assert result.clusters is None and result.affinity_name is None
    assert [a.affinity_name for a in result.attempts] == ["backup"]


def test_explicit_reschedule_restarts_at_the_first_group(schedule: Schedule) -> None:
    binding = (
        a_binding()
        .replicas(10)
        .dynamic()
        .groups(*GROUPS)
        .observing("backup")
        .targets(m2=3, m3=1)
        .rescheduled(triggered="2026-01-02T00:00:00+00:00", last="2026-01-01T00:00:00+00:00")
    )
    result = schedule(binding, _fleet(m2=3, m3=1))
    assert division(result) == {"m1": 10}
    assert result.affinity_name == "primary"


def test_unknown_observed_name_starts_at_zero(schedule: Schedule) -> None:
    result = schedule(a_binding().replicas(4).dynamic().groups(*GROUPS).observing("gone"), _fleet())
    assert result.affinity_name == "primary"


def test_a_fit_error_in_the_first_tried_group_clears_targets_when_all_fail(schedule: Schedule) -> None:
    binding = (
        a_binding()
        .replicas(4)
        .dynamic()
        .groups(term("a", names("nowhere")), term("b", names("m1")))
        .targets(m1=2)
    )
    result = schedule(binding, [a_cluster("m1").free(1)])
    assert result.condition is not None
    assert result.condition.reason == "NoClusterFit"
    assert result.clusters == ()
    assert result.affinity_name is None


def test_fit_error_message_example_10(schedule: Schedule) -> None:
    fleet = [
        a_cluster("m1").tainted("dedicated", "NoSchedule", "gpu"),
        a_cluster("m2").without_api(),
        a_cluster("m3"),
        a_cluster("m4").deleting(),
    ]
    result = schedule(a_binding().replicas(2).dynamic().affinity(names("m1", "m2")).targets(m4=2), fleet)
    assert result.condition is not None
    assert result.condition.reason == "NoClusterFit"
    assert result.condition.message == (
        "0/4 clusters are available: 1 cluster(s) did not have the API resource, "
        "1 cluster(s) did not match the placement cluster affinity constraint, "
        "1 cluster(s) had untolerated taint {dedicated=gpu:NoSchedule}."
    )
    assert result.clusters == ()  # cleared
    assert result.write_placement_annotation


def test_no_cluster_at_all(schedule: Schedule) -> None:
    result = schedule(a_binding().replicas(1), [])
    assert result.condition is not None
    assert result.condition.message == "0/0 clusters are available: no cluster exists."
    deleting_only = schedule(a_binding().replicas(1), [a_cluster("m1").deleting()])
    assert deleting_only.condition is not None
    assert deleting_only.condition.message == "0/1 clusters are available: no cluster exists."


def test_fit_error_counts_sort_as_strings(schedule: Schedule) -> None:
    fleet = [a_cluster(f"t{i}").tainted("k", "NoSchedule") for i in range(10)] + [
        a_cluster("a1").without_api(),
        a_cluster("a2").without_api(),
    ]
    result = schedule(a_binding().replicas(1), fleet)
    assert result.condition is not None
    assert result.condition.message == (
        "0/12 clusters are available: 10 cluster(s) had untolerated taint {k:NoSchedule}, "
        "2 cluster(s) did not have the API resource."
    )


def test_binding_without_placement_is_not_attempted(schedule: Schedule) -> None:
    result = schedule(a_binding().replicas(1).no_placement(), [a_cluster("m1")])
    assert result.condition is None and result.clusters is None


def test_cluster_resource_bindings_take_the_same_path(schedule: Schedule) -> None:
    result = schedule(a_binding("crb").crb().replicas(4).dynamic().groups(*GROUPS), _fleet())
    assert division(result) == {"m1": 4}
    assert result.key == "crb"
