"""Which events enqueue which bindings, and whether a dequeued binding is scheduled (spec §3.1, §3.4)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fleetsched.controller.scheduler.decision import (
    APPLIED_PLACEMENT_ANNOTATION,
    SKIP_LOGGING,
    Verdict,
    binding_update_enqueues,
    cluster_matches_binding,
    cluster_update_reconciles,
    passes_filter,
    should_schedule,
    skip_reason,
)
from fleetsched.scheduler.outcome import applied_placement_json as encode

DIVIDED = {
    "clusterAffinity": {"clusterNames": ["m1", "m2"]},
    "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"},
}


def a_binding(
    placement: dict[str, Any] | None = None,
    *,
    replicas: int = 3,
    generation: int = 2,
    observed: int | None = 2,
    clusters: list[dict[str, Any]] | None = None,
    applied: bool = True,
    **spec: Any,
) -> dict[str, Any]:
    placement = copy.deepcopy(DIVIDED if placement is None else placement)
    annotations = {APPLIED_PLACEMENT_ANNOTATION: encode(placement)} if applied else {}
    status: dict[str, Any] = {
        "lastScheduledTime": "2026-01-01T00:00:10Z",
        "conditions": [{"type": "Scheduled", "status": "True", "reason": "Success"}],
    }
    if observed is not None:
        status["schedulerObservedGeneration"] = observed
    return {
        "metadata": {
            "name": "b",
            "namespace": "ns",
            "generation": generation,
            "annotations": annotations,
            "labels": {"propagationpolicy.karmada.io/permanent-id": "x"},
        },
        "spec": {
            "placement": placement,
            "replicas": replicas,
            "clusters": [{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 1}]
            if clusters is None
            else clusters,
            **spec,
        },
        "status": status,
    }


@pytest.mark.parametrize(
    ("change", "verdict", "reason"),
    [
        pytest.param({}, Verdict.NOTHING, "NoChange", id="steady divided workload"),
        pytest.param({"applied": False}, Verdict.SCHEDULE, "PlacementChanged", id="never scheduled"),
        pytest.param({"replicas": 5}, Verdict.SCHEDULE, "ReplicasChanged", id="scaled"),
        pytest.param({"observed": 1}, Verdict.OBSERVE_GENERATION, "NoChange", id="generation lag only"),
        pytest.param(
            {"rescheduleTriggeredAt": "2026-01-01T00:00:11Z"},
            Verdict.SCHEDULE,
            "RescheduleTriggered",
            id="reschedule after last schedule",
        ),
        pytest.param(
            {"rescheduleTriggeredAt": "2026-01-01T00:00:10.900Z"},
            Verdict.NOTHING,
            "NoChange",
            id="reschedule within the same second is ignored",
        ),
        pytest.param(
            {"replicas": 0, "clusters": []},
            Verdict.SCHEDULE,
            "AlwaysSchedule",
            id="non-workload always rescheduled",
        ),
        pytest.param(
            {
                "placement": {"clusterAffinity": {"clusterNames": ["m1"]}},
                "clusters": [{"name": "m1", "replicas": 3}],
            },
            Verdict.SCHEDULE,
            "AlwaysSchedule",
            id="duplicated always rescheduled",
        ),
    ],
)
def test_should_schedule(change: dict[str, Any], verdict: Verdict, reason: str) -> None:
    decision = should_schedule(a_binding(**change), terminating_clusters=())
    assert (decision.verdict, decision.reason) == (verdict, reason)


def test_result_without_recorded_status_is_scheduled_again() -> None:
    binding = a_binding()
    binding["status"] = {}
    decision = should_schedule(binding, terminating_clusters=())
    assert (decision.verdict, decision.reason) == (Verdict.SCHEDULE, "StatusNotRecorded")


def test_terminating_target_reschedules() -> None:
    decision = should_schedule(a_binding(), terminating_clusters={"m2"})
    assert (decision.verdict, decision.reason) == (Verdict.SCHEDULE, "TargetClusterTerminating")


def test_duplicated_replica_mismatch_counts_as_replicas_changed() -> None:
    placement = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
    binding = a_binding(placement, clusters=[{"name": "m1", "replicas": 2}])
    assert should_schedule(binding, ()).reason == "ReplicasChanged"


def test_filter_needs_matching_scheduler_no_suspension_and_a_policy_label() -> None:
    binding = a_binding()
    assert passes_filter(binding, "default-scheduler")
    assert not passes_filter(binding, "other")
    binding["spec"]["schedulerName"] = "other"
    assert passes_filter(binding, "other")
    binding["spec"]["suspension"] = {"scheduling": True}
    assert not passes_filter(binding, "other")
    unlabelled = a_binding()
    unlabelled["metadata"]["labels"] = {"binding.karmada.io/managed-by": ""}
    assert not passes_filter(unlabelled, "default-scheduler")


def test_the_filter_says_why_it_passes_a_binding_by() -> None:
    binding = a_binding()
    assert skip_reason(binding, "default-scheduler") is None
    assert skip_reason(binding, ("other", "default-scheduler")) is None
    assert skip_reason(binding, "other") == "other-scheduler"
    binding["spec"]["suspension"] = {"scheduling": True}
    assert skip_reason(binding, "default-scheduler") == "suspended"
    unlabelled = a_binding()
    unlabelled["metadata"]["labels"] = {"propagationpolicy.karmada.io/permanent-id": ""}
    assert skip_reason(unlabelled, "default-scheduler") == "no-permanent-id"
    assert SKIP_LOGGING["no-permanent-id"][0] == "warning"
    assert set(SKIP_LOGGING) == {"no-permanent-id", "suspended", "other-scheduler"}


def test_only_generation_changes_enqueue_and_never_our_own() -> None:
    old, new = a_binding(generation=2), a_binding(generation=2)
    new["status"]["conditions"] = [{"type": "Scheduled", "status": "True"}]
    assert not binding_update_enqueues(old, new)
    newer = a_binding(generation=3)
    assert binding_update_enqueues(old, newer)
    assert not binding_update_enqueues(old, newer, own_generation=3)
    assert binding_update_enqueues(old, newer, own_generation=2)


def a_cluster(labels: dict[str, str], generation: int = 1, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "m1", "labels": labels, "generation": generation}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {}, "status": {}}


def test_cluster_updates_reconcile_on_labels_spec_or_deletion_only() -> None:
    old = a_cluster({"a": "1"})
    assert cluster_update_reconciles(old, a_cluster({"a": "1"})) == []
    assert len(cluster_update_reconciles(old, a_cluster({"a": "2"}))) == 2
    assert len(cluster_update_reconciles(old, a_cluster({"a": "1"}, generation=2))) == 2
    assert len(cluster_update_reconciles(old, a_cluster({"a": "1"}, deleting=True))) == 1


def test_cluster_change_uses_the_observed_affinity_term_inline_only() -> None:
    placement = {
        "clusterAffinities": [
            {"affinityName": "a", "clusterNames": ["x"]},
            {"affinityName": "b", "clusterNames": ["m1"], "overflowAffinities": [{"affinityName": "o"}]},
        ]
    }
    binding = a_binding(placement)
    seen: list[dict[str, Any]] = []

    def matches(cluster: Any, affinity: dict[str, Any]) -> bool:
        seen.append(affinity)
        return cluster["metadata"]["name"] in affinity.get("clusterNames", [])

    binding["status"]["schedulerObservingAffinityName"] = "b"
    assert cluster_matches_binding(a_cluster({}), binding, matches)
    assert seen[-1] == {"clusterNames": ["m1"]}
    binding["status"]["schedulerObservingAffinityName"] = "gone"  # falls back to the first term
    assert not cluster_matches_binding(a_cluster({}), binding, matches)
    binding["status"]["schedulerObservedGeneration"] = 1  # generation lag: always enqueue
    assert cluster_matches_binding(a_cluster({}), binding, matches)


@pytest.mark.parametrize(
    "triggered",
    [
        # the edge's former parser read a lowercase "z" (RFC 3339 allows it) as no time at all, so
        # it never rescheduled while the core's converter said the reschedule was due
        "2026-01-01T00:00:11z",
        "2026-01-01t00:00:11Z",
        "2026-01-01T00:00:11.999999Z",
        "2026-01-01T00:00:10.5Z",
        "2026-01-01T01:00:11+01:00",
        "2026-01-01T00:00:11-00:00",
    ],
)
def test_the_decision_reads_reschedule_times_as_the_core_does(triggered: str) -> None:
    from fleetsched.scheduler.convert import binding_from_dict, status_from_dict
    from fleetsched.scheduler.groups import reschedule_required

    binding = a_binding(rescheduleTriggeredAt=triggered)
    core_says = reschedule_required(
        binding_from_dict(binding).reschedule_triggered_at, status_from_dict(binding).last_scheduled_time
    )
    decided = should_schedule(binding, terminating_clusters=()).reason == "RescheduleTriggered"
    assert decided == core_says


def test_lowercase_z_reschedule_is_honoured() -> None:
    # The case the two former parsers disagreed on, stated outright.
    binding = a_binding(rescheduleTriggeredAt="2026-01-01T00:00:11z")
    assert should_schedule(binding, terminating_clusters=()).reason == "RescheduleTriggered"


def test_an_unreadable_binding_cannot_be_decided() -> None:
    from fleetsched.scheduler.convert import ConversionError

    with pytest.raises(ConversionError, match=r"^spec.rescheduleTriggeredAt: must be an RFC 3339 time"):
        should_schedule(a_binding(rescheduleTriggeredAt="yesterday"), terminating_clusters=())
