"""Go printing (``%q``, ``json.Marshal``) and Go decoding rules the messages depend on."""

from __future__ import annotations

from typing import Any

import pytest

from fleetsched.webhook import gojson, schema
from fleetsched.webhook.fielderrors import label_key_messages, render


@pytest.mark.parametrize(("text", "quoted"), [
    pytest.param("ns-2", '"ns-2"', id="plain"),
    pytest.param("", '""', id="empty"),
    pytest.param('a"b\\c', '"a\\"b\\\\c"', id="quote and backslash"),
    pytest.param("tab\there\n", '"tab\\there\\n"', id="short escapes"),
    pytest.param("\x01\x7f", '"\\x01\\x7f"', id="control bytes"),
    pytest.param("é日本", '"é日本"', id="printable unicode kept"),
    pytest.param("\u00a0\u200b", '"\\u00a0\\u200b"', id="non-printable unicode escaped"),
    pytest.param("\U000e0001", '"\\U000e0001"', id="astral non-printable"),
])
def test_go_quote(text: str, quoted: str) -> None:
    assert gojson.quote(text) == quoted


@pytest.mark.parametrize(("value", "text"), [
    pytest.param({"a": "<b>&"}, '{"a":"\\u003cb\\u003e\\u0026"}', id="html escaping"),
    pytest.param(["\u2028", "\b\f\x01"], '["\\u2028","\\b\\f\\u0001"]', id="line separator and controls"),
    pytest.param({"z": 1, "a": [True, None]}, '{"z":1,"a":[true,null]}', id="order kept, compact"),
    pytest.param("é", '"é"', id="non-ascii raw"),
])
def test_go_json(value: Any, text: str) -> None:
    assert gojson.dumps(value) == text


def test_loads_keeps_float_literals_and_rejects_nan() -> None:
    value = gojson.loads(b'{"a": 1.50, "b": 2}')
    assert isinstance(value["a"], gojson.GoFloat) and value["a"].literal == "1.50"
    with pytest.raises(ValueError):
        gojson.loads(b'{"a": NaN}')


def test_loads_replaces_invalid_utf8_and_lone_surrogates() -> None:
    assert gojson.loads(b'{"a": "x\xffy", "b": "\\ud800"}') == {"a": "x\ufffdy", "b": "\ufffd"}


@pytest.mark.parametrize(("typ", "value", "text"), [
    pytest.param(schema.PLACEMENT, {"clusterAffinity": {}, "clusterAffinities": [{"affinityName": "g"}]},
                 '{"clusterAffinity":{},"clusterAffinities":[{"affinityName":"g"}]}',
                 id="present empty pointer"),
    pytest.param(schema.CLUSTER_AFFINITY_TERM, {"exclude": ["x"], "clusterNames": [], "affinityName": ""},
                 '{"affinityName":"","exclude":["x"]}', id="declaration order, empty list dropped"),
    pytest.param(schema.FIELD_SELECTOR, {"matchExpressions": [{"values": [], "operator": "", "key": ""}]},
                 '{"matchExpressions":[{"key":"","operator":""}]}', id="key and operator always printed"),
    pytest.param(schema.LABEL_SELECTOR, {"matchLabels": {"b": "", "a": "1"}},
                 '{"matchLabels":{"a":"1","b":""}}', id="map keys sorted"),
    pytest.param(schema.TOLERATION, {"tolerationSeconds": 0, "key": "k"}, '{"key":"k","tolerationSeconds":0}',
                 id="zero pointer printed"),
    pytest.param(schema.REPLICA_SCHEDULING_STRATEGY,
                 {"weightPreference": {"staticWeightList": [{"targetCluster": {}}]}},
                 '{"weightPreference":{"staticWeightList":[{"targetCluster":{},"weight":0}]}}',
                 id="non-omitempty struct and int"),
    pytest.param(schema.SPREAD_CONSTRAINT, {"minGroups": 0, "maxGroups": 0}, "{}", id="zero ints dropped"),
])
def test_render(typ: Any, value: Any, text: str) -> None:
    assert render(value, typ) == text


@pytest.mark.parametrize(("raw", "message"), [
    pytest.param({"spec": {"placement": "x"}},
                 "json: cannot unmarshal string into Go struct field PropagationSpec.spec.placement of type "
                 "v1alpha1.Placement", id="string for a struct"),
    pytest.param({"spec": {"placement": {"clusterAffinity": {"clusterNames": [1]}}}},
                 "json: cannot unmarshal number into Go struct field "
                 "ClusterAffinity.spec.placement.clusterAffinity"
                 ".clusterNames of type string", id="number in a string list"),
    pytest.param({"spec": {"priority": 2147483648}},
                 "json: cannot unmarshal number 2147483648 into Go struct field "
                 "PropagationSpec.spec.priority of "
                 "type int32", id="int32 overflow"),
    pytest.param({"spec": {"placement": {"spreadConstraints": [{"maxGroups": 1.5}]}}},
                 "json: cannot unmarshal number 1.5 into Go struct field SpreadConstraint.spec.placement."
                 "spreadConstraints.maxGroups of type int", id="fraction for an int"),
    pytest.param({"spec": {"propagateDeps": "true"}},
                 "json: cannot unmarshal string into Go struct field PropagationSpec.spec.propagateDeps of "
                 "type bool",
                 id="string for a bool"),
    pytest.param({"metadata": {"labels": {"a": 1}}},
                 "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type "
                 "string",
                 id="label value"),
    pytest.param({"spec": {"resourceSelectors": {}}},
                 "json: cannot unmarshal object into Go struct field "
                 "PropagationSpec.spec.resourceSelectors of type "
                 "[]v1alpha1.ResourceSelector", id="object for a list"),
    pytest.param({"spec": {"a": 1, "schedulerName": True, "priority": "x"}},
                 "json: cannot unmarshal bool into Go struct field PropagationSpec.spec.schedulerName of "
                 "type string",
                 id="first error in document order wins"),
    pytest.param([], "json: cannot unmarshal array into Go value of type v1alpha1.PropagationPolicy",
                 id="not an object"),
])
def test_decode_errors(raw: Any, message: str) -> None:
    with pytest.raises(schema.DecodeError) as exc:
        schema.decode(raw, schema.PROPAGATION_POLICY)
    assert str(exc.value) == message


@pytest.mark.parametrize(("stamp", "printed"), [
    pytest.param("2024-01-01T01:30:00.123456789+01:30", "2024-01-01T00:00:00Z", id="offset and nanoseconds"),
    pytest.param("2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z", id="utc"),
])
def test_times_print_as_go_does(stamp: str, printed: str) -> None:
    assert schema.to_go(schema.decode({"creationTimestamp": stamp}, schema.OBJECT_META),
                        schema.OBJECT_META)["creationTimestamp"] == printed


@pytest.mark.parametrize("stamp", ["2024-02-30T00:00:00Z", "2024-01-01t00:00:00Z", "yesterday", ""])
def test_bad_times_do_not_decode(stamp: str) -> None:
    with pytest.raises(schema.DecodeError, match="cannot parse as RFC 3339"):
        schema.decode({"metadata": {"creationTimestamp": stamp}}, schema.PROPAGATION_POLICY)


def test_decode_drops_nulls_and_unknown_keys_and_matches_case() -> None:
    decoded = schema.decode({"spec": {"Placement": 1, "placement": None, "priority": None, "x": [1],
                                      "resourceSelectors": [None]},
                             "metadata": {"labels": {"k": None}}}, schema.PROPAGATION_POLICY)
    assert decoded == {"spec": {"resourceSelectors": [{}]}, "metadata": {"labels": {"k": ""}}}


@pytest.mark.parametrize(("key", "messages"), [
    pytest.param("app", [], id="simple"),
    pytest.param("example.com/tier-1", [], id="prefixed"),
    pytest.param("", ["name part must be non-empty", "name part must consist"], id="empty"),
    pytest.param("prefix/", ["name part must be non-empty", "name part must consist"], id="empty name part"),
    pytest.param("a" * 64, ["name part must be no more than 63 bytes"], id="too long"),
    pytest.param("-" * 64, ["name part must be no more than 63 bytes", "name part must consist"],
                 id="too long and bad"),
    pytest.param("é", ["name part must consist"], id="non-ascii"),
    pytest.param("a/b/c", ["a valid label key must consist"], id="two slashes"),
    pytest.param(("a" * 254) + "/x", ["prefix part must be no more than 253 bytes"], id="long prefix"),
    pytest.param("Ex.com/x", ["prefix part a lowercase RFC 1123 subdomain"], id="uppercase prefix"),
    pytest.param("a\n", ["name part must consist"], id="trailing newline is not accepted"),
])
def test_label_key_messages(key: str, messages: list[str]) -> None:
    got = label_key_messages(key)
    assert len(got) == len(messages)
    for text, start in zip(got, messages, strict=True):
        assert text.startswith(start)
