"""The descheduler's filter and arithmetic against cases derived from Karmada's
``pkg/descheduler/core`` (filter.go, helper.go) and ``updateScheduleResult`` (descheduler.go)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fleetsched.descheduler import core
from fleetsched.descheduler.core import ClusterReplicaStatus as S

DYNAMIC = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                 "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}


def binding(
    *,
    placement: Any = DYNAMIC,
    api_version: str = "apps/v1",
    kind: str = "Deployment",
    clusters: dict[str, int] | None = None,
    ready: dict[str, Any] | None = None,
) -> dict[str, Any]:
    annotations = {}
    if placement is not None:
        annotations[core.APPLIED_PLACEMENT_ANNOTATION] = (
            placement if isinstance(placement, str) else json.dumps(placement)
        )
    aggregated = [{"clusterName": name, "status": {"readyReplicas": value}}
                  for name, value in (ready or {}).items()]
    return {
        "metadata": {"name": "web", "namespace": "default", "annotations": annotations},
        "spec": {
            "resource": {"apiVersion": api_version, "kind": kind, "namespace": "default", "name": "web"},
            "replicas": sum((clusters or {}).values()),
            "clusters": [{"name": name, "replicas": count} for name, count in (clusters or {}).items()],
        },
        "status": {"aggregatedStatus": aggregated},
    }


# ---- filter.go ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("placement", "expected"),
    [
        (DYNAMIC, True),
        ({"replicaScheduling": {"replicaSchedulingType": "Divided",
                                "replicaDivisionPreference": "Aggregated"}}, True),
        # a static weight list: the scheduler would only put the replicas back
        ({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                "weightPreference": {"staticWeightList": [
                                    {"targetCluster": {"clusterNames": ["m1"]}, "weight": 1}]}}}, False),
        ({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}},
         False),
        ({"replicaScheduling": {"replicaSchedulingType": "Divided"}}, False),  # no preference
        ({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}, False),
        ({}, False),  # no replicaScheduling: Duplicated
        ({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                "weightPreference": {"dynamicWeight": ""}}}, False),
    ],
)
def test_only_dynamically_divided_placements_are_candidates(placement: Any, expected: bool) -> None:
    assert core.is_candidate(binding(placement=placement)) is expected


@pytest.mark.parametrize(
    ("api_version", "kind", "expected"),
    [("apps/v1", "Deployment", True), ("apps/v1", "StatefulSet", False),
     ("apps/v1beta1", "Deployment", False), ("batch/v1", "Job", False), ("v1", "Deployment", False)],
)
def test_only_apps_v1_deployments_are_candidates(api_version: str, kind: str, expected: bool) -> None:
    assert core.is_candidate(binding(api_version=api_version, kind=kind)) is expected


def test_the_applied_placement_annotation_decides_not_the_spec() -> None:
    without = binding(placement=None)
    without["spec"]["placement"] = DYNAMIC  # the spec says dynamic, but nothing was applied yet
    assert not core.is_candidate(without)
    assert core.applied_placement(without) is None


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '"Divided"'])
def test_a_bad_annotation_is_no_candidate_and_says_why(text: str) -> None:
    bad = binding(placement=text)
    assert not core.is_candidate(bad)
    with pytest.raises(core.PlacementError, match=r"policy\.karmada\.io/applied-placement"):
        core.applied_placement(bad)


def test_filter_bindings_keeps_the_order_of_the_candidates() -> None:
    a, b, c = binding(), binding(kind="StatefulSet"), binding()
    a["metadata"]["name"], c["metadata"]["name"] = "a", "c"
    assert [x["metadata"]["name"] for x in core.filter_bindings([a, b, c])] == ["a", "c"]


# ---- helper.go ----------------------------------------------------------------------------------


def test_ready_replicas_come_from_the_aggregated_status_and_missing_ones_are_unknown() -> None:
    b = binding(clusters={"m1": 3, "m2": 7, "m3": 1}, ready={"m1": 1, "m2": 7})
    b["status"]["aggregatedStatus"] += [
        {"clusterName": "m3", "status": None},  # no status: says nothing
    ]
    assert core.replica_statuses(b) == [S("m1", 3, 1), S("m2", 7, 7), S("m3", 1, core.UNAUTHENTIC_REPLICA)]


def test_a_status_without_a_numeric_ready_count_says_nothing() -> None:
    b = binding(clusters={"m1": 3, "m2": 2}, ready={"m1": "3"})
    b["status"]["aggregatedStatus"].append({"clusterName": "m2", "status": {"replicas": 2}})
    assert core.ready_replicas(b) == {}
    assert core.ready_replicas(binding(ready={"m1": 2.0})) == {"m1": 2}


def test_undesired_clusters_have_fewer_ready_than_assigned_replicas() -> None:
    statuses = [S("m1", 3, 1), S("m2", 7, 7), S("m3", 2, -1), S("m4", 0, -1), S("m5", 1, 4)]
    # Karmada compares with -1 for an unknown ready count: even a cluster assigned 0 is asked
    assert [s.cluster for s in core.undesired(statuses)] == ["m1", "m3", "m4"]


def test_the_smallest_estimator_answer_wins_and_unknown_answers_are_skipped() -> None:
    statuses = [S("m1", 3, 1), S("m2", 7, 7), S("m3", 5, 0)]
    filled = core.fill_unschedulable(statuses, [[2, core.UNAUTHENTIC_REPLICA], [4, 3], None])
    assert filled == [S("m1", 3, 1, 2), S("m2", 7, 7, 0), S("m3", 5, 0, 3)]


@pytest.mark.parametrize("answers", [[], [None], [[-1, -1]]])
def test_no_usable_answer_means_nothing_is_unschedulable(answers: list[list[int] | None]) -> None:
    statuses = [S("m1", 3, 1), S("m3", 5, 0)]
    assert [s.unschedulable for s in core.fill_unschedulable(statuses, answers)] == [0, 0]


# ---- updateScheduleResult -----------------------------------------------------------------------


def test_the_issue_example_moves_two_replicas_out_of_m1() -> None:
    result = core.deschedule([S("m1", 3, 1, 2), S("m2", 7, 7, 0)])
    assert result is not None
    assert result.targets == (1, 7)
    assert result.removed == (("m1", 2),)
    assert result.total == 2
    assert result.message == (
        "Binding has been descheduled, 2 replica(s) in cluster(m1), 2 total descheduled replica(s)"
    )


def test_never_below_the_ready_replicas() -> None:
    # 5 assigned, 4 ready, the estimator says 3 unschedulable (its view lags): keep the 4 ready
    result = core.deschedule([S("m1", 5, 4, 3)])
    assert result is not None and result.targets == (4,) and result.removed == (("m1", 1),)


def test_unknown_ready_replicas_do_not_hold_replicas_back() -> None:
    result = core.deschedule([S("m1", 4, core.UNAUTHENTIC_REPLICA, 4)])
    assert result is not None and result.targets == (0,) and result.total == 4


def test_more_unschedulable_than_assigned_changes_nothing() -> None:
    # Karmada only acts when spec >= unschedulable (the estimator saw more pods than assigned)
    assert core.deschedule([S("m1", 2, 0, 3)]) is None


def test_nothing_unschedulable_changes_nothing() -> None:
    assert core.deschedule([S("m1", 3, 1, 0), S("m2", 7, 7, 0)]) is None


def test_every_cluster_losing_replicas_is_named_in_order() -> None:
    result = core.deschedule([S("m1", 3, 0, 3), S("m2", 4, 4, 0), S("m3", 6, 2, 1)])
    assert result is not None
    assert result.targets == (0, 4, 5)
    assert result.message == ("Binding has been descheduled, 3 replica(s) in cluster(m1), "
                              "1 replica(s) in cluster(m3), 4 total descheduled replica(s)")


def test_the_written_clusters_keep_their_other_fields_and_order() -> None:
    b = binding(clusters={"m1": 3, "m2": 7})
    b["spec"]["clusters"][0]["extra"] = "kept"
    result = core.deschedule([S("m1", 3, 1, 2), S("m2", 7, 7, 0)])
    assert result is not None
    assert core.updated_clusters(b, result) == [{"name": "m1", "replicas": 1, "extra": "kept"},
                                                {"name": "m2", "replicas": 7}]
    assert b["spec"]["clusters"][0]["replicas"] == 3  # the input is not changed


def test_end_to_end_through_the_pure_steps() -> None:
    b = binding(clusters={"m1": 3, "m2": 7}, ready={"m1": 1, "m2": 7})
    statuses = core.replica_statuses(b)
    asked = [s.cluster for s in core.undesired(statuses)]
    assert asked == ["m1"]
    result = core.deschedule(core.fill_unschedulable(statuses, [[2]]))
    assert result is not None
    assert core.updated_clusters(b, result) == [{"name": "m1", "replicas": 1}, {"name": "m2", "replicas": 7}]
