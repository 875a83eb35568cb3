"""Decoding extender answers: strict types, tolerated extras, every malformed case named."""

from __future__ import annotations

import pytest

from fleetsched.extender.errors import ExtenderError, FaultKind
from fleetsched.extender.protocol import decode_filter_result, decode_priorities

CANDIDATES = ["m1", "m2", "m3"]


def _filter(body: str) -> tuple[object, ...]:
    return tuple(decode_filter_result(body.encode(), CANDIDATES, extender="https://e/x"))


def _scores(body: str) -> dict[str, int]:
    return decode_priorities(body.encode(), CANDIDATES, extender="https://e/x")


def test_a_filter_answer_keeps_candidates_in_the_order_given() -> None:
    kept, failed, unresolvable = _filter(
        '{"apiVersion": "extender.fleetsched.io/v1alpha1", "kind": "ExtenderFilterResult",'
        ' "clusterNames": ["m3", "m1"], "failedClusters": {"m2": "too expensive"},'
        ' "failedAndUnresolvableClusters": null, "error": "", "futureField": {"x": 1}}')
    assert kept == ("m1", "m3") and failed == {"m2": "too expensive"} and unresolvable == {}


def test_a_null_cluster_list_keeps_nothing_and_a_minimal_answer_is_enough() -> None:
    assert _filter('{"clusterNames": null}') == ((), {}, {})


def test_priorities_in_both_shapes() -> None:
    assert _scores('{"priorities": [{"cluster": "m1", "score": 10}, {"cluster": "m2", "score": 0}]}') == {
        "m1": 10, "m2": 0}
    assert _scores('[{"host": "m3", "score": 4, "note": "kube shape"}]') == {"m3": 4}


@pytest.mark.parametrize(("body", "kind", "detail"), [
    pytest.param("", FaultKind.MALFORMED, "response is not JSON", id="empty body"),
    pytest.param("[1, 2", FaultKind.MALFORMED, "response is not JSON", id="truncated"),
    pytest.param('{"failedClusters": {}}', FaultKind.MALFORMED, "clusterNames: Field required",
                 id="no clusterNames"),
    pytest.param('{"clusterNames": ["m1", 2]}', FaultKind.MALFORMED,
                 "clusterNames[1]: Input should be a valid string", id="a name that is a number"),
    pytest.param('{"clusterNames": [], "failedClusters": {"m1": 3}}', FaultKind.MALFORMED,
                 "failedClusters.m1: Input should be a valid string", id="a reason that is a number"),
    pytest.param('{"clusterNames": ["m1", "x", "y", "z", "w"]}', FaultKind.MALFORMED,
                 "clusterNames names 'x', 'y', 'z', ..., which were not a candidate", id="strangers kept"),
    pytest.param('{"clusterNames": [], "failedAndUnresolvableClusters": {"q": "no"}}', FaultKind.MALFORMED,
                 "failedAndUnresolvableClusters names 'q', which was not a candidate", id="stranger failed"),
    pytest.param('{"clusterNames": ["m1"], "failedClusters": {"m1": "no"}}', FaultKind.MALFORMED,
                 "cluster 'm1' is both kept and failed", id="kept and failed"),
    pytest.param('{"apiVersion": "extender.fleetsched.io/v2", "clusterNames": []}', FaultKind.MALFORMED,
                 "apiVersion: 'extender.fleetsched.io/v2' is not 'extender.fleetsched.io/v1alpha1'",
                 id="another version"),
    pytest.param('{"kind": "ClusterPriorityList", "clusterNames": []}', FaultKind.MALFORMED,
                 "kind: 'ClusterPriorityList' is not 'ExtenderFilterResult'", id="another kind"),
    pytest.param('{"error": "quota service down"}', FaultKind.ERRORING, "extender error: quota service down",
                 id="error field"),
])
def test_bad_filter_answers(body: str, kind: FaultKind, detail: str) -> None:
    with pytest.raises(ExtenderError) as caught:
        _filter(body)
    assert caught.value.kind is kind and caught.value.verb == "filter"
    assert caught.value.detail == detail or caught.value.detail.startswith(detail)


@pytest.mark.parametrize(("body", "kind", "detail"), [
    pytest.param('{"priorities": [{"cluster": "m1", "score": "7"}]}', FaultKind.MALFORMED,
                 "priorities[0].score: Input should be a valid integer", id="score as a string"),
    pytest.param('{"priorities": [{"cluster": "m1", "score": 7.5}]}', FaultKind.MALFORMED,
                 "priorities[0].score: Input should be a valid integer", id="fractional score"),
    pytest.param('[{"cluster": "m1", "score": true}]', FaultKind.MALFORMED,
                 "[0].score: Input should be a valid integer", id="bool score"),
    pytest.param('{"priorities": [{"cluster": "m1", "score": 11}]}', FaultKind.MALFORMED,
                 "priorities: score 11 for cluster 'm1' is outside 0..10", id="above MaxExtenderPriority"),
    pytest.param('[{"host": "m1", "score": -1}]', FaultKind.MALFORMED,
                 "priorities: score -1 for cluster 'm1' is outside 0..10", id="negative"),
    pytest.param('[{"host": "m1", "score": 1}, {"cluster": "m1", "score": 2}]', FaultKind.MALFORMED,
                 "priorities: cluster 'm1' is scored twice", id="twice"),
    pytest.param('[{"host": "elsewhere", "score": 1}]', FaultKind.MALFORMED,
                 "priorities names 'elsewhere', which was not a candidate", id="stranger"),
    pytest.param('{"error": ""}', FaultKind.MALFORMED, "priorities: Field required", id="no priorities"),
    pytest.param('{"priorities": [], "error": "boom"}', FaultKind.ERRORING, "extender error: boom",
                 id="error field"),
    pytest.param('{"kind": "ExtenderFilterResult", "priorities": []}', FaultKind.MALFORMED,
                 "kind: 'ExtenderFilterResult' is not 'ClusterPriorityList'", id="another kind"),
])
def test_bad_prioritize_answers(body: str, kind: FaultKind, detail: str) -> None:
    with pytest.raises(ExtenderError) as caught:
        _scores(body)
    assert caught.value.kind is kind and caught.value.verb == "prioritize"
    assert caught.value.detail == detail or caught.value.detail.startswith(detail)
    assert str(caught.value) == f"extender https://e/x prioritize failed ({kind}): {caught.value.detail}"
