"""The applied-placement annotation as the core writes it (§15) and as §3.4 compares it (Go's DeepEqual)."""

from __future__ import annotations

import json

import pytest

from fleetsched.controller.scheduler.placement_json import canonical, placement_changed
from fleetsched.scheduler.outcome import applied_placement_json as encode

PLACEMENT = {
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "weightPreference": {"staticWeightList": [{"targetCluster": {}, "weight": 1}]},
        "replicaDivisionPreference": "Weighted",
    },
    "clusterAffinity": {
        "clusterNames": ["m1", "m2"],
        "labelSelector": {"matchLabels": {"b": "2", "a": "<1>"}},
    },
    "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2, "minGroups": 0}],
}


def test_encoding_follows_go_struct_order_omitempty_and_html_escaping() -> None:
    assert encode(PLACEMENT) == (
        '{"clusterAffinity":{"labelSelector":{"matchLabels":{"a":"\\u003c1\\u003e","b":"2"}},'
        '"clusterNames":["m1","m2"]},"spreadConstraints":[{"spreadByField":"cluster","maxGroups":2}],'
        '"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted",'
        '"weightPreference":{"staticWeightList":[{"targetCluster":{},"weight":1}]}}}'
    )


def test_affinity_terms_keep_their_name_and_inline_fields() -> None:
    text = encode(
        {
            "clusterAffinities": [
                {
                    "affinityName": "primary",
                    "clusterNames": ["a"],
                    "overflowAffinities": [{"affinityName": "burst"}],
                }
            ]
        }
    )
    assert text == (
        '{"clusterAffinities":[{"affinityName":"primary","clusterNames":["a"],'
        '"overflowAffinities":[{"affinityName":"burst"}]}]}'
    )


def test_annotation_round_trip_is_unchanged() -> None:
    assert not placement_changed(PLACEMENT, encode(PLACEMENT), "")


def test_explicit_empty_list_differs_from_absent_list() -> None:
    # Go decodes [] to a non-nil empty slice, and omitempty drops it from the annotation.
    with_empty = {"clusterAffinity": {"clusterNames": []}}
    assert canonical(with_empty) != canonical({"clusterAffinity": {}})
    assert placement_changed(with_empty, encode(with_empty), "")


def test_unknown_fields_are_ignored_as_go_decoding_ignores_them() -> None:
    assert not placement_changed({**PLACEMENT, "unknownField": 3}, encode(PLACEMENT), "")


def test_zero_scalars_equal_absent_ones() -> None:
    assert not placement_changed(
        {"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 0}]},
        '{"spreadConstraints":[{"spreadByField":"cluster"}]}',
        "",
    )


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        pytest.param(None, True, id="absent annotation means first scheduling"),
        pytest.param("", True, id="empty annotation means first scheduling"),
        pytest.param("{not json", False, id="unparsable annotation is not a change"),
    ],
)
def test_annotation_edge_cases(annotation: str | None, expected: bool) -> None:
    assert placement_changed(PLACEMENT, annotation, "") is expected


def _groups(*terms: dict[str, object]) -> dict[str, object]:
    return {"clusterAffinities": list(terms), "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}


A = {"affinityName": "a", "clusterNames": ["m1"]}
B = {"affinityName": "b", "clusterNames": ["m2"]}


def test_editing_another_term_does_not_reschedule() -> None:
    applied = encode(_groups(A, B))
    assert not placement_changed(_groups({"affinityName": "a", "clusterNames": ["m9"]}, B), applied, "b")
    assert not placement_changed(_groups(B), applied, "b")


def test_editing_the_observed_term_reschedules() -> None:
    applied = encode(_groups(A, B))
    assert placement_changed(_groups(A, {"affinityName": "b", "clusterNames": ["m3"]}), applied, "b")


def test_terms_change_without_observed_name_reschedules() -> None:
    assert placement_changed(_groups(B), encode(_groups(A, B)), "")


def test_observed_term_removed_reschedules() -> None:
    assert placement_changed(_groups(A), encode(_groups(A, B)), "b")


def test_other_fields_always_reschedule() -> None:
    applied = encode(_groups(A, B))
    changed = {**_groups(A, B), "clusterTolerations": [{"key": "k", "operator": "Exists"}]}
    assert placement_changed(changed, applied, "a")


def test_encoded_annotation_is_valid_json() -> None:
    assert json.loads(encode(PLACEMENT))["clusterAffinity"]["labelSelector"]["matchLabels"]["a"] == "<1>"
