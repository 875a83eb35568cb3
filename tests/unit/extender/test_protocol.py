"""Decoding extender answers: strict types, tolerated extras, every malformed case named."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.extender import protocol
from fleetsched.extender.errors import ExtenderError, FaultKind
from fleetsched.extender.protocol import decode_filter_result, decode_priorities

CANDIDATES = ["m1", "m2", "m3"]


def _filter(body: str) -> tuple[object, ...]:
    result = decode_filter_result(body.encode(), CANDIDATES, extender="https://e/x")
    return result.kept, result.failed, result.unresolvable


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


# ----------------------------------------------------------- the fast paths read what the models read
_names = st.sampled_from(["m1", "m2", "m3", "x"])
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.floats(0, 10, allow_nan=False),
                     _names, st.just("extender.fleetsched.io/v1alpha1"))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_names, inner, max_size=3)), max_leaves=8)
_item = st.dictionaries(st.sampled_from(["cluster", "host", "score", "extra"]),
                        st.one_of(_names, st.integers(-1, 11), st.booleans(), st.none()), max_size=4)
_filter_answer = st.dictionaries(
    st.sampled_from(["apiVersion", "kind", "clusterNames", "failedClusters",
                     "failedAndUnresolvableClusters", "error", "extra"]),
    st.one_of(_values, st.lists(_names, max_size=4), st.dictionaries(_names, _names, max_size=3)),
    max_size=6)
_priority_answer = st.one_of(
    st.lists(_item, max_size=4),
    st.dictionaries(st.sampled_from(["apiVersion", "kind", "priorities", "error", "extra"]),
                    st.one_of(_values, st.lists(_item, max_size=4)), max_size=5))


def _outcome(decode: Any, body: bytes) -> Any:
    try:
        return ("ok", decode(body, CANDIDATES, extender="e"))
    except ExtenderError as exc:
        return ("error", exc.kind, exc.detail)


@settings(max_examples=300, deadline=None)
@given(_filter_answer)
def test_the_fast_filter_path_reads_what_the_model_reads(answer: dict[str, Any]) -> None:
    body = orjson.dumps(answer)
    fast = protocol._fast_filter(body)
    if fast is not None:
        assert fast == protocol._model_filter(body, "e", "filter")
    # and the public decoder gives the same outcome as the model path alone
    model_only = _outcome(lambda b, c, extender: _decode_with_model(b, c), body)
    assert _outcome(decode_filter_result, body) == model_only


@settings(max_examples=300, deadline=None)
@given(_priority_answer)
def test_the_fast_prioritize_path_reads_what_the_model_reads(answer: Any) -> None:
    body = orjson.dumps(answer)
    fast = protocol._fast_priorities(body)
    if fast is not None:
        assert fast == protocol._model_priorities(body, "e", "prioritize")


def _decode_with_model(body: bytes, candidates: list[str]) -> Any:
    fast, protocol._fast_filter = protocol._fast_filter, lambda _: None  # type: ignore[assignment]
    try:
        return decode_filter_result(body, candidates, extender="e")
    finally:
        protocol._fast_filter = fast  # type: ignore[assignment]
