from __future__ import annotations

import datetime as dt
import json
from typing import Any

from fleetsched.scheduler.outcome import (
    APPLIED_PLACEMENT_ANNOTATION,
    Condition,
    ScheduleResult,
    applied_placement_json,
    render_into_binding,
)
from fleetsched.scheduler.types import TargetCluster

NOW = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.UTC)
BINDING = {
    "apiVersion": "work.karmada.io/v1alpha2",
    "kind": "ResourceBinding",
    "metadata": {"name": "b", "namespace": "default", "generation": 3},
    "spec": {
        "replicas": 3,
        "placement": {
            "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
            "clusterAffinity": {"clusterNames": ["m1"]},
        },
        "clusters": [{"name": "old", "replicas": 3}],
    },
    "status": {
        "schedulerObservingAffinityName": "keep",
        "conditions": [
            {
                "type": "FullyApplied",
                "status": "True",
                "reason": "x",
                "message": "",
                "lastTransitionTime": "t0",
            },
            {
                "type": "Scheduled",
                "status": "False",
                "reason": "NoClusterFit",
                "message": "m",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
        ],
    },
}


def _result(**kw: object) -> ScheduleResult:
    base: dict[str, object] = {
        "key": "default/b",
        "condition": Condition(True, "Success", "Binding has been scheduled successfully."),
        "clusters": (TargetCluster("m1", 3), TargetCluster("m2", 0)),
        "affinity_name": None,
        "write_placement_annotation": True,
    }
    base.update(kw)
    return ScheduleResult(**base)  # type: ignore[arg-type]


def test_success_writes_targets_condition_and_generation() -> None:
    out = render_into_binding(BINDING, _result(), now=NOW)
    assert out["spec"]["clusters"] == [{"name": "m1", "replicas": 3}, {"name": "m2"}]
    assert out["status"]["schedulerObservingAffinityName"] == "keep"
    scheduled = [c for c in out["status"]["conditions"] if c["type"] == "Scheduled"]
    assert scheduled == [
        {
            "type": "Scheduled",
            "status": "True",
            "reason": "Success",
            "message": "Binding has been scheduled successfully.",
            "lastTransitionTime": "2026-03-01T12:00:00Z",
        }
    ]
    assert out["status"]["conditions"][0]["type"] == "FullyApplied"
    assert out["status"]["schedulerObservedGeneration"] == 3
    assert out["status"]["lastScheduledTime"] == "2026-03-01T12:00:00Z"
    annotation = out["metadata"]["annotations"][APPLIED_PLACEMENT_ANNOTATION]
    assert annotation == (
        '{"clusterAffinity":{"clusterNames":["m1"]},'
        '"replicaScheduling":{"replicaSchedulingType":"Duplicated"}}'
    )
    assert BINDING["spec"]["clusters"] == [{"name": "old", "replicas": 3}]  # input untouched


def test_failure_keeps_targets_and_transition_time_when_status_unchanged() -> None:
    out = render_into_binding(
        BINDING,
        _result(
            condition=Condition(False, "Unschedulable", "no room"),
            clusters=None,
            write_placement_annotation=False,
        ),
        now=NOW,
    )
    assert out["spec"]["clusters"] == [{"name": "old", "replicas": 3}]
    scheduled = next(c for c in out["status"]["conditions"] if c["type"] == "Scheduled")
    assert scheduled["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert scheduled["reason"] == "Unschedulable"
    assert "schedulerObservedGeneration" not in out["status"]
    assert "annotations" not in out["metadata"]


def test_fit_error_clears_targets_and_affinity_name_is_written_on_success() -> None:
    cleared = render_into_binding(
        BINDING, _result(condition=Condition(False, "NoClusterFit", "0/1"), clusters=()), now=NOW
    )
    assert "clusters" not in cleared["spec"]
    named = render_into_binding(BINDING, _result(affinity_name="backup"), now=NOW)
    assert named["status"]["schedulerObservingAffinityName"] == "backup"


def test_no_attempt_writes_nothing() -> None:
    out = render_into_binding(
        BINDING, _result(condition=None, clusters=None, write_placement_annotation=False)
    )
    assert out == json.loads(json.dumps(BINDING))


def test_applied_placement_uses_go_field_order_and_escapes() -> None:
    placement = {
        "replicaScheduling": {
            "weightPreference": {"staticWeightList": [{"weight": 1, "targetCluster": {}}]},
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
        },
        "clusterAffinities": [{"clusterNames": ["a&b"], "affinityName": "g"}],
        "spreadConstraints": [{"minGroups": 1, "spreadByField": "cluster", "maxGroups": 0}],
    }
    assert applied_placement_json(placement) == (
        '{"clusterAffinities":[{"affinityName":"g","clusterNames":["a\\u0026b"]}],'
        '"spreadConstraints":[{"spreadByField":"cluster","minGroups":1}],'
        '"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted",'
        '"weightPreference":{"staticWeightList":[{"targetCluster":{},"weight":1}]}}}'
    )


def test_multi_template_targets_carry_their_components() -> None:
    result = _result(clusters=(TargetCluster("m1", 0, (("jm", 1), ("tm", 0))),))
    out = render_into_binding(BINDING, result, now=NOW)
    assert out["spec"]["clusters"] == [
        {"name": "m1", "components": [{"name": "jm", "replicas": 1}, {"name": "tm"}]}
    ]


def test_applied_placement_keeps_pointer_zeros_and_required_strings() -> None:
    placement = {
        "clusterTolerations": [
            {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0}
        ],
        "workloadAffinity": {"affinity": {"groupByLabelKey": ""}},
    }
    assert applied_placement_json(placement) == (
        '{"clusterTolerations":[{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":0}],'
        '"workloadAffinity":{"affinity":{"groupByLabelKey":""}}}'
    )


def test_the_annotation_text_is_memoised_by_content_and_equals_a_fresh_rendering() -> None:
    from fleetsched.scheduler import outcome

    placements: list[dict[str, Any]] = [
        {"clusterAffinity": {"clusterNames": ["m1", "m2"]}, "zUnknown": 1, "aUnknown": [1, 2]},
        {"aUnknown": [1, 2], "zUnknown": 1, "clusterAffinity": {"clusterNames": ["m1", "m2"]}},  # same
        {"clusterAffinity": {"clusterNames": ["m2", "m1"]}},  # list order is content
        {"replicaScheduling": {"weightPreference": {"staticWeightList": [{"weight": 1}]}}},
        {"replicaScheduling": {"weightPreference": {"staticWeightList": [{"weight": True}]}}},  # not 1
        {"replicaScheduling": {"weightPreference": {"staticWeightList": [{"weight": 1.0}]}}},  # not 1
        {"clusterTolerations": [{"key": "<&>", "tolerationSeconds": 0}]},
        {"x": float("nan")},  # orjson writes NaN as null: never taken from the memo
        {"x": None},
        {"x": 10**30},  # past orjson's integers: rendered uncached
    ]
    for placement in placements * 2:  # the second pass reads the memo
        assert outcome.applied_placement_json(placement) == outcome._placement_text(placement)
    assert outcome.applied_placement_json(placements[0]) == outcome.applied_placement_json(placements[1])
    assert outcome.applied_placement_json({"x": float("nan")}) == '{"x":NaN}'
    assert outcome.applied_placement_json({"x": None}) == "{}"
