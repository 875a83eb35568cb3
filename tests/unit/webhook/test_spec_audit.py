"""An audit of the webhook against webhook.md, statement by statement, over the whole wire path.

Every expectation here is written from the text of webhook.md (§3-§6), not from the code: the
request is built the way the shared conformance checker builds it, goes through
``review.handle`` (decode, rules, encode) and the answer is compared byte for byte. Mutations
are checked by applying the returned patch and comparing with the object the spec describes,
with the checker's own rule that Go zero values count as absent.
"""

from __future__ import annotations

import base64
import json
import random
from typing import Any

import pytest

from fleetsched.webhook import review

from . import spec_model
from .builders import conformance_checker

check = conformance_checker()

PP = "PropagationPolicy"
CPP = "ClusterPropagationPolicy"
PP_LABEL = "propagationpolicy.karmada.io/permanent-id"
CPP_LABEL = "clusterpropagationpolicy.karmada.io/permanent-id"
PP_FINALIZER = "karmada.io/propagation-policy-controller"
CPP_FINALIZER = "karmada.io/cluster-propagation-policy-controller"

# §4.2, quoted from the spec (note the two spaces before each "or").
NAME_FORMAT = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
NAME_PATTERN = "name part " + NAME_FORMAT
NAME_EMPTY = "name part must be non-empty"
NAME_LONG = "name part must be no more than 63 bytes"
PREFIX_EMPTY = "prefix part must be non-empty"
PREFIX_LONG = "prefix part must be no more than 253 bytes"
PREFIX_PATTERN = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
    "'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
TOO_MANY_SLASHES = (
    "a valid label key "
    + NAME_FORMAT
    + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
)

CO_EXIST = "clusterAffinities cannot co-exist with clusterAffinity"
OVERFLOW_SCHEDULING = (
    "overflowAffinities can only be used together with dynamic weight or aggregated scheduling"
)
OVERFLOW_INLINE = "overflowAffinities can only be used together with the inline ClusterAffinity"
OVERFLOW_UNIQUE = (
    "overflow affinity name must be unique and must not duplicate the primary group's affinityName"
)
UNIQUE_TERM = "each affinity term in a policy must have a unique name"
NEEDS_CLUSTER = (
    "the cluster spread constraint must be enabled in one of the constraints in case of "
    "SpreadByField is enabled"
)
SAME_GROUP_KEY = "affinity and antiAffinity must not use the same groupByLabelKey"
NAMESPACE_MISMATCH = "namespace of resource selector must be the same as the namespace of the policy"
EMPTY_NAME = (
    "name cannot be empty if preemption is Always, the empty name may cause unexpected resources preemption"
)
SUSPENSION = "suspension dispatching cannot co-exist with dispatchingOnClusters.clusterNames"
PROPAGATE_DEPS = (
    "spec.propagateDeps: Invalid value: false: application failover is set, propagateDeps must be true"
)

AGGREGATED = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}
GRACE = "spec.failover.application.gracePeriodSeconds"


# --- helpers: the request exactly as the conformance checker builds it ------------------------


def a_policy(
    spec: Any,
    *,
    kind: str = PP,
    labels: dict[str, Any] | None = None,
    namespace: str = "default",
    **metadata: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "audit"}
    if kind == PP:
        meta["namespace"] = namespace
    meta["labels"] = {PP_LABEL if kind == PP else CPP_LABEL: "id-1"} if labels is None else labels
    meta.update(metadata)
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": kind, "metadata": meta, "spec": spec}


def send(
    obj: dict[str, Any],
    hook: str,
    *,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    namespace: str | None = None,
) -> dict[str, Any]:
    case: dict[str, Any] = {"operation": operation, "object": obj}
    if old is not None:
        case["oldObject"] = old
    if namespace is not None:
        case["namespace"] = namespace
    sent = check.build_review(case, "audit-uid")
    outcome = review.handle(check.hook_path(obj["kind"], hook), json.dumps(sent).encode(), "application/json")
    response = outcome.review["response"]
    assert response["uid"] == "audit-uid"
    return response


def verdict(
    spec: Any,
    *,
    kind: str = PP,
    operation: str = "CREATE",
    old_spec: Any = None,
    labels: dict[str, Any] | None = None,
    old_labels: dict[str, Any] | None = None,
    namespace: str | None = None,
) -> str | None:
    """``None`` when allowed, else the denial message (which must come with 403 Forbidden)."""
    old = None
    if operation == "UPDATE":
        old = a_policy(
            spec if old_spec is None else old_spec,
            kind=kind,
            labels=labels if old_labels is None else old_labels,
        )
    response = send(
        a_policy(spec, kind=kind, labels=labels),
        "validating",
        operation=operation,
        old=old,
        namespace=namespace,
    )
    status = response["status"]
    if response["allowed"]:
        assert status["code"] == 200 and not status.get("message")
        return None
    assert (status["code"], status.get("reason")) == (403, "Forbidden"), status
    return str(status["message"])


def mutated(
    obj: dict[str, Any], *, operation: str = "CREATE", namespace: str | None = None
) -> dict[str, Any]:
    old = obj if operation == "UPDATE" else None
    response = send(obj, "mutating", operation=operation, old=old, namespace=namespace)
    assert response["allowed"] is True and response["status"]["code"] == 200
    ops = json.loads(base64.b64decode(response["patch"])) if response.get("patch") else []
    if ops:
        assert response["patchType"] == "JSONPatch"
    else:
        assert "patchType" not in response
    return check.prune_zero(check.apply_patch(obj, ops))


def one(path: str, message: str) -> str:
    return f"{path}: {message}"


def many(*errors: str) -> str:
    return "[" + ", ".join(errors) + "]"


def assert_first(message: str | None, error: str) -> None:
    """``error`` is the whole message or the first of several."""
    assert message is not None
    assert message == error or message.startswith("[" + error + ", "), message


# --- §4: value rendering --------------------------------------------------------------------


def s1(placement: dict[str, Any]) -> str | None:
    """The S1 message for a placement that also carries ``clusterAffinity: {}`` and an empty list."""
    return verdict({"placement": {"clusterAffinity": {}, "clusterAffinities": [], **placement}})


@pytest.mark.parametrize(
    ("placement", "rendered"),
    [
        pytest.param({}, '{"clusterAffinity":{}}', id="empty pointer printed as {}, empty list omitted"),
        pytest.param(
            {"clusterAffinity": {"labelSelector": {}, "fieldSelector": {}}},
            '{"clusterAffinity":{"labelSelector":{},"fieldSelector":{}}}',
            id="present empty selectors",
        ),
        pytest.param(
            {
                "clusterAffinity": {
                    "labelSelector": {"matchLabels": {}, "matchExpressions": []},
                    "clusterNames": [],
                    "exclude": [],
                }
            },
            '{"clusterAffinity":{"labelSelector":{}}}',
            id="empty lists and maps omitted",
        ),
        pytest.param(
            {"clusterAffinity": {"labelSelector": {"matchExpressions": [{}]}}},
            '{"clusterAffinity":{"labelSelector":{"matchExpressions":[{"key":"","operator":""}]}}}',
            id="label requirement key and operator always printed",
        ),
        pytest.param(
            {
                "replicaScheduling": {
                    "weightPreference": {
                        "staticWeightList": [
                            {
                                "weight": 1,
                                "targetCluster": {"fieldSelector": {"matchExpressions": [{"values": []}]}},
                            }
                        ]
                    }
                }
            },
            '{"clusterAffinity":{},"replicaScheduling":{"weightPreference":{"staticWeightList":[{"targetCluster":'
            '{"fieldSelector":{"matchExpressions":[{"key":"","operator":""}]}},"weight":1}]}}}',
            id="field requirement key and operator always printed, empty values omitted",
        ),
        pytest.param(
            {
                "clusterAffinity": {
                    "exclude": ["b"],
                    "clusterNames": ["a"],
                    "fieldSelector": {
                        "matchExpressions": [{"values": ["v"], "operator": "In", "key": "zone"}]
                    },
                    "labelSelector": {
                        "matchExpressions": [{"operator": "In", "key": "k"}],
                        "matchLabels": {"z": "1", "a": "2", "B": "3"},
                    },
                }
            },
            '{"clusterAffinity":{"labelSelector":{"matchLabels":{"B":"3","a":"2","z":"1"},'
            '"matchExpressions":[{"key":"k","operator":"In"}]},"fieldSelector":{"matchExpressions":'
            '[{"key":"zone","operator":"In","values":["v"]}]},"clusterNames":["a"],"exclude":["b"]}}',
            id="struct field order and sorted map keys",
        ),
        pytest.param(
            {
                "clusterTolerations": [
                    {"tolerationSeconds": 0, "effect": "E", "value": "v", "operator": "O", "key": "k"},
                    {},
                    {"key": "", "tolerationSeconds": -3},
                ]
            },
            '{"clusterAffinity":{},"clusterTolerations":[{"key":"k","operator":"O","value":"v","effect":"E",'
            '"tolerationSeconds":0},{},{"tolerationSeconds":-3}]}',
            id="toleration order, tolerationSeconds printed even when 0",
        ),
        pytest.param(
            {
                "spreadConstraints": [
                    {"minGroups": 0, "maxGroups": 0, "spreadByLabel": "", "spreadByField": ""},
                    {"minGroups": 2, "maxGroups": 3, "spreadByLabel": "l", "spreadByField": "f"},
                ]
            },
            '{"clusterAffinity":{},"spreadConstraints":[{},{"spreadByField":"f","spreadByLabel":"l",'
            '"maxGroups":3,"minGroups":2}]}',
            id="spread constraint order, zero values omitted",
        ),
        pytest.param(
            {"replicaScheduling": {}},
            '{"clusterAffinity":{},"replicaScheduling":{}}',
            id="present empty replicaScheduling",
        ),
        pytest.param(
            {"replicaScheduling": {"weightPreference": {}}},
            '{"clusterAffinity":{},"replicaScheduling":{"weightPreference":{}}}',
            id="present empty weightPreference",
        ),
        pytest.param(
            {
                "replicaScheduling": {
                    "weightPreference": {
                        "dynamicWeight": "AvailableReplicas",
                        "staticWeightList": [{}, {"weight": 2, "targetCluster": {"clusterNames": ["m"]}}],
                    },
                    "replicaDivisionPreference": "Weighted",
                    "replicaSchedulingType": "Divided",
                }
            },
            '{"clusterAffinity":{},"replicaScheduling":{"replicaSchedulingType":"Divided",'
            '"replicaDivisionPreference":"Weighted","weightPreference":{"staticWeightList":'
            '[{"targetCluster":{},"weight":0},{"targetCluster":{"clusterNames":["m"]},"weight":2}],'
            '"dynamicWeight":"AvailableReplicas"}}}',
            id="static weight targetCluster and weight always",
        ),
        pytest.param(
            {"workloadAffinity": {}},
            '{"clusterAffinity":{},"workloadAffinity":{}}',
            id="present empty workloadAffinity",
        ),
        pytest.param(
            {"workloadAffinity": {"antiAffinity": {"groupByLabelKey": "b"}, "affinity": {}}},
            '{"clusterAffinity":{},"workloadAffinity":{"affinity":{"groupByLabelKey":""},'
            '"antiAffinity":{"groupByLabelKey":"b"}}}',
            id="groupByLabelKey always printed",
        ),
        pytest.param(
            {"workloadAffinity": {"affinity": None, "antiAffinity": None}},
            '{"clusterAffinity":{},"workloadAffinity":{}}',
            id="null pointers are absent",
        ),
        pytest.param(
            {"clusterAffinity": {"clusterNames": ["a<b>&c", 'q"uote\\', "tab\there", "é"]}},
            '{"clusterAffinity":{"clusterNames":["a\\u003cb\\u003e\\u0026c","q\\"uote\\\\","tab\\there",'
            '"é"]}}',
            id="JSON escaping of < > & quotes and controls",
        ),
        pytest.param(
            {
                "workloadAffinity": {"affinity": {"groupByLabelKey": "x"}},
                "spreadConstraints": [{}],
                "clusterTolerations": [{}],
                "replicaScheduling": {},
            },
            '{"clusterAffinity":{},"clusterTolerations":[{}],"spreadConstraints":[{}],"replicaScheduling":{},'
            '"workloadAffinity":{"affinity":{"groupByLabelKey":"x"}}}',
            id="placement key order",
        ),
    ],
)
def test_s4_value_rendering_of_placement(placement: dict[str, Any], rendered: str) -> None:
    assert_first(s1(placement), one("spec.placement", f"Invalid value: {rendered}: {CO_EXIST}"))


def test_s4_placement_terms_render_affinity_name_always_and_overflow_last() -> None:
    message = verdict(
        {
            "placement": {
                "clusterAffinity": {"clusterNames": ["m0"]},
                "clusterAffinities": [
                    {
                        "overflowAffinities": [{"exclude": ["x"], "affinityName": "o"}, {}],
                        "exclude": ["e"],
                        "clusterNames": ["c"],
                        "affinityName": "t",
                    }
                ],
                "replicaScheduling": AGGREGATED,
            }
        }
    )
    assert_first(
        message,
        one(
            "spec.placement",
            'Invalid value: {"clusterAffinity":{"clusterNames":["m0"]},'
            '"clusterAffinities":[{"affinityName":"t","clusterNames":["c"],"exclude":["e"],'
            '"overflowAffinities":[{"affinityName":"o","exclude":["x"]},{"affinityName":""}]}],'
            '"replicaScheduling":{"replicaSchedulingType":"Divided",'
            f'"replicaDivisionPreference":"Aggregated"}}}}: {CO_EXIST}',
        ),
    )


@pytest.mark.parametrize(
    ("namespace", "quoted"),
    [
        pytest.param("ns-2", '"ns-2"', id="plain"),
        pytest.param("", '""', id="empty"),
        pytest.param('a"b\\c', '"a\\"b\\\\c"', id="quote and backslash escaped"),
        pytest.param("a<b>&c", '"a<b>&c"', id="no HTML escaping in %q"),
        pytest.param("tab\tnl\n", '"tab\\tnl\\n"', id="control characters"),
        pytest.param("\x01\x7f", '"\\x01\\x7f"', id="other controls as \\x"),
        pytest.param("é€😀", '"é€😀"', id="printable unicode kept"),
        pytest.param("\u00a0\u200b", '"\\u00a0\\u200b"', id="non-printable unicode escaped"),
    ],
)
def test_s4_strings_are_go_quoted(namespace: str, quoted: str) -> None:
    message = verdict({"resourceSelectors": [{"apiVersion": "v1", "kind": "A", "namespace": namespace}]})
    assert message == one(
        "spec.resourceSelectors[0].namespace", f"Invalid value: {quoted}: {NAMESPACE_MISMATCH}"
    )


def test_s4_field_selector_detail_quotes_key_with_percent_q_and_value_with_json() -> None:
    message = verdict(
        {
            "placement": {
                "clusterAffinity": {
                    "fieldSelector": {"matchExpressions": [{"key": 'a<&>"', "operator": "In"}]}
                }
            }
        }
    )
    assert message == one(
        "spec.placement.clusterAffinity.fieldSelector",
        'Invalid value: {"matchExpressions":[{"key":"a\\u003c\\u0026\\u003e\\"","operator":"In"}]}: '
        'unsupported key "a<&>\\"", must be provider, region, or zone',
    )


def test_s4_duplicates_collapse_and_order_is_kept() -> None:
    # S6 fires at terms 1 and 2 with the same text; it is printed once, where it first occurred.
    message = verdict(
        {
            "placement": {
                "clusterAffinities": [
                    {"affinityName": "a"},
                    {"affinityName": "a"},
                    {"affinityName": "a b"},
                    {"affinityName": "a b"},
                ]
            }
        }
    )
    whole = '[{"affinityName":"a"},{"affinityName":"a"},{"affinityName":"a b"},{"affinityName":"a b"}]'
    assert message == many(
        one("spec.placement.clusterAffinities", f"Invalid value: {whole}: {UNIQUE_TERM}"),
        one("spec.placement.clusterAffinities[2]", f'Invalid value: "a b": {NAME_PATTERN}'),
        one("spec.placement.clusterAffinities[3]", f'Invalid value: "a b": {NAME_PATTERN}'),
    )


# --- §4.2: label-key messages --------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "messages"),
    [
        pytest.param("valid-name", [], id="valid plain"),
        pytest.param("example.com/Valid_Name.1", [], id="valid prefixed"),
        pytest.param("a" * 63, [], id="63 bytes is fine"),
        pytest.param("a/b/c", [TOO_MANY_SLASHES], id="more than one slash only message"),
        pytest.param("//", [TOO_MANY_SLASHES], id="two slashes no parts"),
        pytest.param("/name", [PREFIX_EMPTY], id="empty prefix"),
        pytest.param("/", [PREFIX_EMPTY, NAME_EMPTY, NAME_PATTERN], id="empty prefix and name"),
        pytest.param("Example.com/x", [PREFIX_PATTERN], id="prefix uppercase"),
        pytest.param("a_b/x", [PREFIX_PATTERN], id="prefix underscore"),
        pytest.param("-a/x", [PREFIX_PATTERN], id="prefix leading dash"),
        pytest.param("a" * 254 + "/x", [PREFIX_LONG], id="prefix too long but well formed"),
        pytest.param("A" * 254 + "/x", [PREFIX_LONG, PREFIX_PATTERN], id="prefix too long and malformed"),
        pytest.param("a" * 253 + "/x", [], id="prefix of 253 bytes is fine"),
        pytest.param("", [NAME_EMPTY, NAME_PATTERN], id="empty key"),
        pytest.param("ex.com/", [NAME_EMPTY, NAME_PATTERN], id="empty name after prefix"),
        pytest.param("a" * 64, [NAME_LONG], id="name too long but well formed"),
        pytest.param("-" + "a" * 63, [NAME_LONG, NAME_PATTERN], id="name too long and malformed"),
        pytest.param("é" * 32, [NAME_LONG, NAME_PATTERN], id="length counts bytes"),
        pytest.param("bad name", [NAME_PATTERN], id="space"),
        pytest.param("tier:1", [NAME_PATTERN], id="colon"),
        pytest.param("a-", [NAME_PATTERN], id="trailing dash"),
        pytest.param("_a", [NAME_PATTERN], id="leading underscore"),
        pytest.param("a\n", [NAME_PATTERN], id="trailing newline is not an end"),
        pytest.param("A", [], id="single uppercase letter"),
        pytest.param("Ex.com/y", [PREFIX_PATTERN], id="prefix error only, name fine"),
        pytest.param("EX/-", [PREFIX_PATTERN, NAME_PATTERN], id="prefix and name both bad"),
    ],
)
@pytest.mark.parametrize("where", ["S5", "S10", "S19", "S20", "S28", "S29"])
def test_s42_label_key_messages_on_every_rule_that_uses_them(
    key: str, messages: list[str], where: str
) -> None:
    inline = {"clusterNames": ["m"]}
    spec: dict[str, Any]
    if where == "S5":
        spec, path = (
            {"placement": {"clusterAffinities": [{"affinityName": key}]}},
            "spec.placement.clusterAffinities[0]",
        )
    elif where == "S10":
        spec = {
            "placement": {
                "replicaScheduling": AGGREGATED,
                "clusterAffinities": [
                    {"affinityName": "primary", **inline, "overflowAffinities": [{"affinityName": key}]}
                ],
            }
        }
        path = "spec.placement.clusterAffinities[0].overflowAffinities[0].affinityName"
    elif where == "S19":
        spec = {"placement": {"workloadAffinity": {"affinity": {"groupByLabelKey": key}}}}
        path = "spec.placement.workloadAffinity.affinity.groupByLabelKey"
    elif where == "S20":
        spec = {"placement": {"workloadAffinity": {"antiAffinity": {"groupByLabelKey": key}}}}
        path = "spec.placement.workloadAffinity.antiAffinity.groupByLabelKey"
    elif where == "S28":
        spec = {
            "propagateDeps": True,
            "failover": {
                "application": {
                    "decisionConditions": {"tolerationSeconds": 1},
                    "statePreservation": {"rules": [{"aliasLabelName": key, "jsonPath": "{.x}"}]},
                }
            },
        }
        path = "spec.failover.application.statePreservation.rules[0].aliasLabelName"
    else:
        spec = {
            "failover": {
                "cluster": {"statePreservation": {"rules": [{"aliasLabelName": key, "jsonPath": "x"}]}}
            }
        }
        path = "spec.failover.cluster.statePreservation.rules[0].aliasLabelName"
    expected = [one(path, f"Invalid value: {json_quote(key)}: {m}") for m in messages]
    got = verdict(spec)
    if not expected:
        assert got is None
    elif len(expected) == 1:
        assert got == expected[0]
    else:
        assert got == many(*expected)


def json_quote(s: str) -> str:
    """Go's %q for the ASCII and printable strings used above."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# --- §6.1: metadata and immutability rules --------------------------------------------------

SCHEDULER = "the schedulerName should not be updated"


def immutable(label: str) -> str:
    return f"label {label} is immutable, it can only be set by the system during creation"


def required(label: str) -> str:
    return f"label {label} is required, it should be set by the mutating admission webhook during creation"


@pytest.mark.parametrize(
    ("kind", "label"), [pytest.param(PP, PP_LABEL, id="PP"), pytest.param(CPP, CPP_LABEL, id="CPP")]
)
@pytest.mark.parametrize(
    ("case", "expected"),
    [
        pytest.param(
            {"operation": "UPDATE", "spec": {"schedulerName": "b"}, "old_spec": {"schedulerName": "a"}},
            SCHEDULER,
            id="V1 changed",
        ),
        pytest.param(
            {"operation": "UPDATE", "spec": {"schedulerName": ""}, "old_spec": {}},
            None,
            id="V1 absent equals empty",
        ),
        pytest.param(
            {"operation": "UPDATE", "spec": {}, "old_spec": {"schedulerName": "default-scheduler"}},
            SCHEDULER,
            id="V1 removing it is a change",
        ),
        pytest.param(
            {"operation": "CREATE", "spec": {"schedulerName": "x"}, "old_spec": {"schedulerName": "y"}},
            None,
            id="V1 not on CREATE",
        ),
        pytest.param(
            {"operation": "UPDATE", "labels": {"L": "b"}, "old_labels": {"L": "a"}},
            "immutable",
            id="V2 changed",
        ),
        pytest.param(
            {"operation": "UPDATE", "labels": {"L": ""}, "old_labels": {}},
            None,
            id="V2 adding an empty value is no change",
        ),
        pytest.param(
            {"operation": "UPDATE", "labels": {}, "old_labels": {"L": ""}},
            "required",
            id="V2 removing an empty value is no change, then V3",
        ),
        pytest.param(
            {"operation": "UPDATE", "labels": {}, "old_labels": {"L": "a"}},
            "immutable",
            id="V2 removing a value",
        ),
        pytest.param(
            {"operation": "UPDATE", "labels": {"L": "a", "other": "x"}, "old_labels": {"L": "a"}},
            None,
            id="V2 other labels may change",
        ),
        pytest.param(
            {
                "operation": "UPDATE",
                "spec": {"schedulerName": "b"},
                "old_spec": {"schedulerName": "a"},
                "labels": {},
                "old_labels": {"L": "a"},
            },
            SCHEDULER,
            id="V1 before V2 and V3",
        ),
        pytest.param(
            {
                "operation": "UPDATE",
                "labels": {"L": "b"},
                "old_labels": {"L": "a"},
                "spec": {"placement": {"clusterTolerations": [{"operator": "Lt"}]}},
            },
            "immutable",
            id="V2 stops before spec rules",
        ),
        pytest.param({"operation": "CREATE", "labels": {}}, "required", id="V3 absent"),
        pytest.param({"operation": "CREATE", "labels": None}, "required", id="V3 null labels"),
        pytest.param({"operation": "CREATE", "labels": {"L": ""}}, None, id="V3 empty value passes"),
        pytest.param(
            {"operation": "CREATE", "labels": {"L": None}}, None, id="V3 null value is an empty value"
        ),
        pytest.param(
            {"operation": "CREATE", "labels": {"other/L": "x"}}, "required", id="V3 needs the exact key"
        ),
        pytest.param(
            {"operation": "UPDATE", "labels": {}, "old_labels": {}}, "required", id="V3 on UPDATE too"
        ),
        pytest.param(
            {
                "operation": "CREATE",
                "labels": {},
                "spec": {"placement": {"clusterTolerations": [{"operator": "Lt"}]}},
            },
            "required",
            id="V3 stops before spec rules",
        ),
    ],
)
def test_v1_v3_metadata_rules(kind: str, label: str, case: dict[str, Any], expected: str | None) -> None:
    def fill(labels: dict[str, Any] | None) -> dict[str, Any] | None:
        if labels is None:
            return None
        return {
            (label if k == "L" else k.replace("L", label) if k == "other/L" else k): v
            for k, v in labels.items()
        }

    labels = case.get("labels", {"L": "id-1"})
    obj_labels = fill(labels) if labels is not None else None
    spec = case.get("spec", {})
    obj = a_policy(spec, kind=kind, labels={} if obj_labels is None else obj_labels)
    if labels is None:
        obj["metadata"]["labels"] = None
    old = None
    if case["operation"] == "UPDATE" or "old_spec" in case:
        old = a_policy(case.get("old_spec", spec), kind=kind, labels=fill(case.get("old_labels", labels)))
    response = send(obj, "validating", operation=case["operation"], old=old)
    want = {"immutable": immutable(label), "required": required(label)}.get(expected or "", expected)
    if want is None:
        assert response["allowed"] is True, response
    else:
        assert (response["allowed"], response["status"]["code"], response["status"]["message"]) == (
            False,
            403,
            want,
        )


def test_v3_other_kind_label_does_not_count() -> None:
    assert verdict({}, kind=CPP, labels={PP_LABEL: "x"}) == required(CPP_LABEL)
    assert verdict({}, kind=PP, labels={CPP_LABEL: "x"}) == required(PP_LABEL)


# --- §6.2: spec rules ---------------------------------------------------------------------

FS = "spec.placement.clusterAffinity.fieldSelector"


def fs(*expressions: dict[str, Any]) -> dict[str, Any]:
    return {"matchExpressions": list(expressions)}


SPEC_RULES: list[Any] = [
    # S1
    pytest.param(
        {"placement": {"clusterAffinity": {}, "clusterAffinities": [{"affinityName": "a"}]}},
        one(
            "spec.placement",
            f'Invalid value: {{"clusterAffinity":{{}},"clusterAffinities":'
            f'[{{"affinityName":"a"}}]}}: {CO_EXIST}',
        ),
        id="S1 empty affinity counts",
    ),
    pytest.param(
        {"placement": {"clusterAffinity": None, "clusterAffinities": []}},
        None,
        id="S1 null affinity is absent",
    ),
    pytest.param({"placement": {"clusterAffinities": []}}, None, id="S1 list alone"),
    # S2
    pytest.param(
        {
            "placement": {
                "replicaScheduling": {"replicaSchedulingType": "Divided"},
                "clusterAffinities": [
                    {
                        "affinityName": "a",
                        "clusterNames": ["m"],
                        "overflowAffinities": [{"affinityName": "b"}],
                    }
                ],
            }
        },
        one(
            "spec.placement.clusterAffinities[0].overflowAffinities",
            f'Invalid value: [{{"affinityName":"b"}}]: {OVERFLOW_SCHEDULING}',
        ),
        id="S2 divided without preference",
    ),
    pytest.param(
        {
            "placement": {
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                },
                "clusterAffinities": [
                    {
                        "affinityName": "a",
                        "clusterNames": ["m"],
                        "overflowAffinities": [{"affinityName": "b"}],
                    }
                ],
            }
        },
        one(
            "spec.placement.clusterAffinities[0].overflowAffinities",
            f'Invalid value: [{{"affinityName":"b"}}]: {OVERFLOW_SCHEDULING}',
        ),
        id="S2 weighted without weightPreference",
    ),
    pytest.param(
        {
            "placement": {
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": [{"targetCluster": {}, "weight": 1}]},
                },
                "clusterAffinities": [
                    {
                        "affinityName": "a",
                        "clusterNames": ["m"],
                        "overflowAffinities": [{"affinityName": "b"}],
                    }
                ],
            }
        },
        one(
            "spec.placement.clusterAffinities[0].overflowAffinities",
            f'Invalid value: [{{"affinityName":"b"}}]: {OVERFLOW_SCHEDULING}',
        ),
        id="S2 weighted with static weights only",
    ),
    pytest.param(
        {
            "placement": {
                "replicaScheduling": {
                    "replicaSchedulingType": "Duplicated",
                    "replicaDivisionPreference": "Aggregated",
                },
                "clusterAffinities": [
                    {
                        "affinityName": "a",
                        "clusterNames": ["m"],
                        "overflowAffinities": [{"affinityName": "b"}],
                    }
                ],
            }
        },
        one(
            "spec.placement.clusterAffinities[0].overflowAffinities",
            f'Invalid value: [{{"affinityName":"b"}}]: {OVERFLOW_SCHEDULING}',
        ),
        id="S2 duplicated aggregated",
    ),
    pytest.param(
        {
            "placement": {
                "clusterAffinities": [
                    {"affinityName": "a", "clusterNames": ["m"]},
                    {"affinityName": "b", "clusterNames": ["m"], "overflowAffinities": None},
                ]
            }
        },
        None,
        id="S2 null overflow is absent",
    ),
    # S3 / S4
    pytest.param(
        {
            "placement": {
                "clusterAffinity": {
                    "fieldSelector": fs(
                        {"key": "zone", "operator": "NotIn"},
                        {"key": "provider", "operator": "In", "values": ["a"]},
                        {"key": "region", "operator": "In"},
                    )
                }
            }
        },
        None,
        id="S3 supported keys and operators",
    ),
    pytest.param(
        {"placement": {"clusterAffinity": {"fieldSelector": fs({"key": "Zone", "operator": "Exists"})}}},
        one(
            FS,
            'Invalid value: {"matchExpressions":[{"key":"Zone","operator":"Exists"}]}: '
            'unsupported key "Zone", must be provider, region, or zone',
        ),
        id="S3 key checked before operator",
    ),
    pytest.param(
        {
            "placement": {
                "clusterAffinity": {
                    "fieldSelector": fs(
                        {"key": "zone", "operator": "In"},
                        {"key": "region", "operator": ""},
                        {"key": "x", "operator": "In"},
                    )
                }
            }
        },
        one(
            FS,
            'Invalid value: {"matchExpressions":[{"key":"zone","operator":"In"},{"key":"region",'
            '"operator":""},{"key":"x","operator":"In"}]}: unsupported operator "", must be In or NotIn',
        ),
        id="S4 only the first offending expression",
    ),
    pytest.param({"placement": {"clusterAffinity": {"fieldSelector": {}}}}, None, id="S3 empty selector"),
    # S5 / S6
    pytest.param(
        {
            "placement": {
                "clusterAffinities": [
                    {"affinityName": "x", "clusterNames": ["a"]},
                    {"affinityName": "y"},
                    {"affinityName": "x"},
                ]
            }
        },
        one(
            "spec.placement.clusterAffinities",
            f'Invalid value: [{{"affinityName":"x","clusterNames":["a"]}},{{"affinityName":"y"}},'
            f'{{"affinityName":"x"}}]: {UNIQUE_TERM}',
        ),
        id="S6 whole list",
    ),
    # S7 / S8
    pytest.param(
        {
            "placement": {
                "clusterAffinities": [
                    {"affinityName": "a", "fieldSelector": fs({"key": "cluster", "operator": "In"})}
                ]
            }
        },
        one(
            "spec.placement.clusterAffinities[0].fieldSelector",
            'Invalid value: {"matchExpressions":[{"key":"cluster","operator":"In"}]}: '
            'unsupported key "cluster", must be provider, region, or zone',
        ),
        id="S7 term key",
    ),
    # S9
    pytest.param(
        {
            "placement": {
                "replicaScheduling": AGGREGATED,
                "clusterAffinities": [
                    {
                        "affinityName": "a",
                        "clusterNames": [],
                        "exclude": [],
                        "overflowAffinities": [{"affinityName": "b"}],
                    }
                ],
            }
        },
        one(
            "spec.placement.clusterAffinities[0].overflowAffinities",
            f'Invalid value: [{{"affinityName":"b"}}]: {OVERFLOW_INLINE}',
        ),
        id="S9 empty lists are empty",
    ),
    pytest.param(
        {
            "placement": {
                "replicaScheduling": AGGREGATED,
                "clusterAffinities": [
                    {"affinityName": "a", "labelSelector": {}, "overflowAffinities": [{"affinityName": "b"}]}
                ],
            }
        },
        None,
        id="S9 present empty labelSelector is an inline affinity",
    ),
    pytest.param(
        {
            "placement": {
                "replicaScheduling": AGGREGATED,
                "clusterAffinities": [
                    {"affinityName": "a", "fieldSelector": {}, "overflowAffinities": [{"affinityName": "b"}]}
                ],
            }
        },
        None,
        id="S9 present empty fieldSelector is an inline affinity",
    ),
    pytest.param(
        {
            "placement": {
                "replicaScheduling": AGGREGATED,
                "clusterAffinities": [
                    {"affinityName": "a", "exclude": ["m"], "overflowAffinities": [{"affinityName": "b"}]}
                ],
            }
        },
        None,
        id="S9 exclude alone is an inline affinity",
    ),
    pytest.param(
        {
            "placement": {
                "replicaScheduling": AGGREGATED,
                "clusterAffinities": [{"affinityName": "a", "overflowAffinities": []}],
            }
        },
        one(
            "spec.placement.clusterAffinities[0].overflowAffinities", f"Invalid value: []: {OVERFLOW_INLINE}"
        ),
        id="S9 empty overflow list is present",
    ),
    # S11
    pytest.param(
        {
            "placement": {
                "replicaScheduling": AGGREGATED,
                "clusterAffinities": [
                    {
                        "affinityName": "a",
                        "clusterNames": ["m"],
                        "overflowAffinities": [
                            {"affinityName": "b"},
                            {"affinityName": "a"},
                            {"affinityName": "b"},
                        ],
                    },
                    {
                        "affinityName": "b",
                        "clusterNames": ["m"],
                        "overflowAffinities": [{"affinityName": "a"}],
                    },
                ],
            }
        },
        many(
            one(
                "spec.placement.clusterAffinities[0].overflowAffinities[1].affinityName",
                f'Invalid value: "a": {OVERFLOW_UNIQUE}',
            ),
            one(
                "spec.placement.clusterAffinities[0].overflowAffinities[2].affinityName",
                f'Invalid value: "b": {OVERFLOW_UNIQUE}',
            ),
        ),
        id="S11 per term only",
    ),
    # S12
    pytest.param(
        {
            "placement": {
                "replicaScheduling": AGGREGATED,
                "clusterAffinities": [
                    {
                        "affinityName": "a",
                        "clusterNames": ["m"],
                        "overflowAffinities": [
                            {"affinityName": "b", "fieldSelector": fs({"key": "zone", "operator": "Gt"})}
                        ],
                    }
                ],
            }
        },
        one(
            "spec.placement.clusterAffinities[0].overflowAffinities[0].fieldSelector",
            'Invalid value: {"matchExpressions":[{"key":"zone","operator":"Gt"}]}: '
            'unsupported operator "Gt", must be In or NotIn',
        ),
        id="S12 overflow operator",
    ),
    # S13-S18
    pytest.param(
        {"placement": {"spreadConstraints": [{"spreadByLabel": "rack", "minGroups": -1, "maxGroups": -2}]}},
        many(
            one(
                "spec.placement.spreadConstraints[0]",
                'Invalid value: {"spreadByLabel":"rack","maxGroups":-2,"minGroups":-1}: '
                "minGroups lower than 0 is not allowed",
            ),
            one(
                "spec.placement.spreadConstraints[0]",
                'Invalid value: {"spreadByLabel":"rack","maxGroups":-2,"minGroups":-1}: '
                "maxGroups lower than 0 is not allowed",
            ),
        ),
        id="S14 then S15, S16 needs maxGroups above 0",
    ),
    pytest.param(
        {"placement": {"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 0, "minGroups": 5}]}},
        None,
        id="S16 maxGroups 0 means unset",
    ),
    pytest.param(
        {"placement": {"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2, "minGroups": 2}]}},
        None,
        id="S16 equal is fine",
    ),
    pytest.param(
        {"placement": {"spreadConstraints": [{"spreadByLabel": "a"}, {"spreadByLabel": "a"}]}},
        None,
        id="S17 S18 labels only",
    ),
    pytest.param(
        {"placement": {"spreadConstraints": [{"spreadByField": "cluster"}, {"spreadByField": "cluster"}]}},
        one(
            "spec.placement.spreadConstraints",
            'Invalid value: [{"spreadByField":"cluster"},{"spreadByField":"cluster"}]: '
            "multiple cluster spread constraints are not allowed",
        ),
        id="S17 cluster twice",
    ),
    pytest.param(
        {"placement": {"spreadConstraints": [{"spreadByField": "zone", "spreadByLabel": "x"}]}},
        many(
            one(
                "spec.placement.spreadConstraints[0]",
                'Invalid value: {"spreadByField":"zone","spreadByLabel":"x"}: '
                "spreadByLabel should not co-exist with spreadByField",
            ),
            one(
                "spec.placement.spreadConstraints",
                f'Invalid value: [{{"spreadByField":"zone","spreadByLabel":"x"}}]: {NEEDS_CLUSTER}',
            ),
        ),
        id="S13 and S18",
    ),
    pytest.param(
        {
            "placement": {
                "spreadConstraints": [
                    {"spreadByField": "cluster"},
                    {"spreadByField": "region"},
                    {"spreadByLabel": "x"},
                ]
            }
        },
        None,
        id="S18 satisfied",
    ),
    # S19-S21
    pytest.param(
        {
            "placement": {
                "workloadAffinity": {
                    "affinity": {"groupByLabelKey": "app"},
                    "antiAffinity": {"groupByLabelKey": "app"},
                }
            }
        },
        one(
            "spec.placement.workloadAffinity",
            'Invalid value: {"affinity":{"groupByLabelKey":"app"},"antiAffinity":{"groupByLabelKey":"app"}}: '
            f"{SAME_GROUP_KEY}",
        ),
        id="S21",
    ),
    pytest.param(
        {
            "placement": {
                "workloadAffinity": {
                    "affinity": {"groupByLabelKey": "a"},
                    "antiAffinity": {"groupByLabelKey": "b"},
                }
            }
        },
        None,
        id="S21 different keys",
    ),
    pytest.param(
        {"placement": {"workloadAffinity": {"affinity": {"groupByLabelKey": "a"}}}},
        None,
        id="S21 one term only",
    ),
    # S22
    pytest.param(
        {
            "placement": {
                "clusterTolerations": [{"operator": "Gt"}, {"operator": "lt"}, {"operator": "Lt", "key": "k"}]
            }
        },
        many(
            one(
                "spec.placement.clusterTolerations[0].operator",
                'Unsupported value: "Gt": supported values: "", "Exists", "Equal"',
            ),
            one(
                "spec.placement.clusterTolerations[2].operator",
                'Unsupported value: "Lt": supported values: "", "Exists", "Equal"',
            ),
        ),
        id="S22 exact case only",
    ),
    # S23-S27
    pytest.param(
        {"failover": {"application": {"decisionConditions": {"tolerationSeconds": 1}}}},
        PROPAGATE_DEPS,
        id="S23 propagateDeps absent",
    ),
    pytest.param(
        {"propagateDeps": False, "failover": {"application": {"decisionConditions": {}}}},
        PROPAGATE_DEPS,
        id="S23 propagateDeps false, S24 absent reads 300",
    ),
    pytest.param(
        {"failover": {"application": None, "cluster": {}}}, None, id="S23 null application is absent"
    ),
    pytest.param({"failover": {"cluster": {"purgeMode": "Directly"}}}, None, id="S23 cluster failover only"),
    pytest.param(
        {
            "propagateDeps": True,
            "failover": {"application": {"decisionConditions": {"tolerationSeconds": 0}}},
        },
        None,
        id="S24 zero is fine",
    ),
    pytest.param(
        {
            "propagateDeps": True,
            "failover": {
                "application": {"decisionConditions": {"tolerationSeconds": -1}, "gracePeriodSeconds": 0}
            },
        },
        many(
            one(
                "spec.failover.application.decisionConditions.tolerationSeconds",
                "Invalid value: -1: must be greater than or equal to 0",
            ),
            one(GRACE, "Invalid value: 0: only takes effect when purgeMode is gracefully"),
            one(GRACE, "Invalid value: 0: must be greater than 0"),
        ),
        id="S24 S25 absent purge mode, S27 zero",
    ),
    pytest.param(
        {
            "propagateDeps": True,
            "failover": {
                "application": {
                    "decisionConditions": {"tolerationSeconds": 1},
                    "purgeMode": "gracefully",
                    "gracePeriodSeconds": 5,
                }
            },
        },
        one(GRACE, "Invalid value: 5: only takes effect when purgeMode is gracefully"),
        id="S25 purge mode compared literally",
    ),
    pytest.param(
        {
            "propagateDeps": True,
            "failover": {
                "application": {
                    "decisionConditions": {"tolerationSeconds": 1},
                    "purgeMode": "Gracefully",
                    "gracePeriodSeconds": -7,
                }
            },
        },
        one(GRACE, "Invalid value: -7: must be greater than 0"),
        id="S27 negative",
    ),
    pytest.param(
        {
            "propagateDeps": True,
            "failover": {
                "application": {
                    "decisionConditions": {"tolerationSeconds": 1},
                    "purgeMode": "Gracefully",
                    "gracePeriodSeconds": None,
                }
            },
        },
        one(GRACE, "Invalid value: null: should not be empty when purgeMode is gracefully"),
        id="S26 null grace period is absent",
    ),
    pytest.param(
        {
            "propagateDeps": True,
            "failover": {
                "application": {
                    "decisionConditions": {"tolerationSeconds": 1},
                    "purgeMode": "Gracefully",
                    "gracePeriodSeconds": 1,
                }
            },
        },
        None,
        id="S27 one is fine",
    ),
    # S31
    pytest.param(
        {
            "preemption": "Always",
            "resourceSelectors": [
                {"apiVersion": "v1", "kind": "A", "namespace": "default", "name": "n"},
                {"apiVersion": "v1", "kind": "A", "namespace": "default"},
            ],
        },
        one("spec.resourceSelectors[1].name", f'Invalid value: "": {EMPTY_NAME}'),
        id="S31 second selector",
    ),
    pytest.param(
        {
            "preemption": "always",
            "resourceSelectors": [{"apiVersion": "v1", "kind": "A", "namespace": "default"}],
        },
        None,
        id="S31 preemption compared literally",
    ),
    pytest.param(
        {
            "preemption": "Never",
            "resourceSelectors": [{"apiVersion": "v1", "kind": "A", "namespace": "default"}],
        },
        None,
        id="S31 Never",
    ),
    # S32
    pytest.param(
        {"suspension": {"dispatching": True, "dispatchingOnClusters": {"clusterNames": ["m1"]}}},
        one(
            "spec.suspension.suspension",
            'Invalid value: {"dispatching":true,"dispatchingOnClusters":{"clusterNames":["m1"]}}: '
            f"{SUSPENSION}",
        ),
        id="S32",
    ),
    pytest.param(
        {"suspension": {"dispatching": True, "dispatchingOnClusters": {"clusterNames": []}}},
        None,
        id="S32 empty names",
    ),
    pytest.param({"suspension": {"dispatching": True, "dispatchingOnClusters": {}}}, None, id="S32 no names"),
    pytest.param(
        {"suspension": {"dispatching": None, "dispatchingOnClusters": {"clusterNames": ["m"]}}},
        None,
        id="S32 dispatching absent",
    ),
]


@pytest.mark.parametrize("kind", [PP, CPP])
@pytest.mark.parametrize(("spec", "expected"), SPEC_RULES)
def test_s6_spec_rules_for_both_kinds(kind: str, spec: dict[str, Any], expected: str | None) -> None:
    assert verdict(spec, kind=kind) == expected
    # Rules run on UPDATE as well (§1), against the new object.
    assert verdict(spec, kind=kind, operation="UPDATE") == expected


@pytest.mark.parametrize(
    ("selectors", "request_namespace", "expected"),
    [
        pytest.param(
            [{"apiVersion": "v1", "kind": "A"}],
            "default",
            one("spec.resourceSelectors[0].namespace", f'Invalid value: "": {NAMESPACE_MISMATCH}'),
            id="S30 empty namespace fails",
        ),
        pytest.param(
            [
                {"apiVersion": "v1", "kind": "A", "namespace": "default"},
                {"apiVersion": "v1", "kind": "A", "namespace": "Default"},
            ],
            "default",
            one("spec.resourceSelectors[1].namespace", f'Invalid value: "Default": {NAMESPACE_MISMATCH}'),
            id="S30 case sensitive",
        ),
        pytest.param(
            [{"apiVersion": "v1", "kind": "A", "namespace": "team-a"}],
            "team-a",
            None,
            id="S30 compares with the request namespace, not metadata",
        ),
        pytest.param(
            [{"apiVersion": "v1", "kind": "A", "namespace": "default"}],
            "team-a",
            one("spec.resourceSelectors[0].namespace", f'Invalid value: "default": {NAMESPACE_MISMATCH}'),
            id="S30 metadata namespace does not count",
        ),
    ],
)
def test_s30_selector_namespace_pp_only(
    selectors: list[dict[str, Any]], request_namespace: str, expected: str | None
) -> None:
    assert verdict({"resourceSelectors": selectors}, namespace=request_namespace) == expected
    assert verdict({"resourceSelectors": selectors}, kind=CPP) is None


# --- §6.3: evaluation order ---------------------------------------------------------------


def test_s63_every_step_in_order() -> None:
    spec = {
        "preemption": "Always",
        "resourceSelectors": [{"apiVersion": "v1", "kind": "A", "namespace": "other"}],
        "suspension": {"dispatching": True, "dispatchingOnClusters": {"clusterNames": ["m"]}},
        "failover": {
            "cluster": {"statePreservation": {"rules": [{"aliasLabelName": "c-", "jsonPath": "x"}]}},
            "application": {
                "decisionConditions": {"tolerationSeconds": -1},
                "purgeMode": "Never",
                "gracePeriodSeconds": -2,
                "statePreservation": {"rules": [{"aliasLabelName": "a-", "jsonPath": "x"}]},
            },
        },
        "placement": {
            "clusterTolerations": [{"operator": "Gt"}],
            "workloadAffinity": {
                "affinity": {"groupByLabelKey": "k-"},
                "antiAffinity": {"groupByLabelKey": "k-"},
            },
            "spreadConstraints": [
                {"spreadByField": "zone", "spreadByLabel": "l", "minGroups": -1},
                {"spreadByField": "zone"},
            ],
            "clusterAffinities": [
                {
                    "affinityName": "t-",
                    "overflowAffinities": [
                        {"affinityName": "t-", "fieldSelector": fs({"key": "k", "operator": "In"})}
                    ],
                    "fieldSelector": fs({"key": "zone", "operator": "Exists"}),
                },
                {"affinityName": "t-"},
            ],
            "clusterAffinity": {"fieldSelector": fs({"key": "bad", "operator": "In"})},
        },
    }
    placement = spec["placement"]
    assert isinstance(placement, dict)
    message = verdict(spec)
    assert message is not None and message.startswith("[spec.placement: Invalid value: {")
    errors = split_errors(message)
    spreads = '[{"spreadByField":"zone","spreadByLabel":"l","minGroups":-1},{"spreadByField":"zone"}]'
    o0 = "spec.placement.clusterAffinities[0].overflowAffinities[0]"
    wa = "spec.placement.workloadAffinity"
    rule0 = "statePreservation.rules[0].aliasLabelName"
    expected_tail = [
        'spec.placement.clusterAffinities[0].overflowAffinities: Invalid value: [{"affinityName":"t-",'
        '"fieldSelector":{"matchExpressions":[{"key":"k","operator":"In"}]}}]: ' + OVERFLOW_SCHEDULING,
        'spec.placement.clusterAffinity.fieldSelector: Invalid value: {"matchExpressions":[{"key":"bad",'
        '"operator":"In"}]}: unsupported key "bad", must be provider, region, or zone',
        f'spec.placement.clusterAffinities[0]: Invalid value: "t-": {NAME_PATTERN}',
        'spec.placement.clusterAffinities[0].fieldSelector: Invalid value: {"matchExpressions":'
        '[{"key":"zone","operator":"Exists"}]}: unsupported operator "Exists", must be In or NotIn',
        f'{o0}.affinityName: Invalid value: "t-": {NAME_PATTERN}',
        f'{o0}.affinityName: Invalid value: "t-": {OVERFLOW_UNIQUE}',
        f'{o0}.fieldSelector: Invalid value: {{"matchExpressions":'
        '[{"key":"k","operator":"In"}]}: unsupported key "k", must be provider, region, or zone',
        f'spec.placement.clusterAffinities[1]: Invalid value: "t-": {NAME_PATTERN}',
        'spec.placement.clusterAffinities: Invalid value: [{"affinityName":"t-","fieldSelector":'
        '{"matchExpressions":[{"key":"zone","operator":"Exists"}]},"overflowAffinities":[{"affinityName":"t-","fieldSelector":'
        '{"matchExpressions":[{"key":"k","operator":"In"}]}}]},{"affinityName":"t-"}]: ' + UNIQUE_TERM,
        'spec.placement.spreadConstraints[0]: Invalid value: {"spreadByField":"zone","spreadByLabel":"l",'
        '"minGroups":-1}: spreadByLabel should not co-exist with spreadByField',
        'spec.placement.spreadConstraints[0]: Invalid value: {"spreadByField":"zone","spreadByLabel":"l",'
        '"minGroups":-1}: minGroups lower than 0 is not allowed',
        f"spec.placement.spreadConstraints: Invalid value: {spreads}: "
        "multiple zone spread constraints are not allowed",
        f"spec.placement.spreadConstraints: Invalid value: {spreads}: {NEEDS_CLUSTER}",
        f'{wa}.affinity.groupByLabelKey: Invalid value: "k-": {NAME_PATTERN}',
        f'{wa}.antiAffinity.groupByLabelKey: Invalid value: "k-": {NAME_PATTERN}',
        'spec.placement.workloadAffinity: Invalid value: {"affinity":{"groupByLabelKey":"k-"},"antiAffinity":'
        f'{{"groupByLabelKey":"k-"}}}}: {SAME_GROUP_KEY}',
        'spec.placement.clusterTolerations[0].operator: Unsupported value: "Gt": '
        'supported values: "", "Exists", "Equal"',
        PROPAGATE_DEPS,
        "spec.failover.application.decisionConditions.tolerationSeconds: Invalid value: -1: "
        "must be greater than or equal to 0",
        f"{GRACE}: Invalid value: -2: only takes effect when purgeMode is gracefully",
        f"{GRACE}: Invalid value: -2: must be greater than 0",
        f'spec.failover.application.{rule0}: Invalid value: "a-": {NAME_PATTERN}',
        f'spec.failover.cluster.{rule0}: Invalid value: "c-": {NAME_PATTERN}',
        f'spec.resourceSelectors[0].namespace: Invalid value: "other": {NAMESPACE_MISMATCH}',
        f'spec.resourceSelectors[0].name: Invalid value: "": {EMPTY_NAME}',
        'spec.suspension.suspension: Invalid value: {"dispatching":true,"dispatchingOnClusters":'
        f'{{"clusterNames":["m"]}}}}: {SUSPENSION}',
    ]
    assert errors[0].endswith(": " + CO_EXIST)
    assert errors[1:] == expected_tail


def split_errors(message: str) -> list[str]:
    """Split an aggregated message at the ``, spec.`` boundaries (no value above contains one)."""
    assert message.startswith("[") and message.endswith("]")
    parts = message[1:-1].split(", spec.")
    return [parts[0]] + ["spec." + p for p in parts[1:]]


# --- §6.5: accepted ----------------------------------------------------------------------

ACCEPTED: list[Any] = [
    pytest.param(
        {
            "placement": {
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "weightPreference": {
                        "staticWeightList": [
                            {"targetCluster": {"clusterNames": ["a"]}, "weight": 0},
                            {"targetCluster": {"clusterNames": ["a"]}, "weight": -3},
                            {"targetCluster": {}, "weight": 1},
                        ]
                    },
                }
            }
        },
        id="zero negative duplicate weights",
    ),
    pytest.param(
        {
            "placement": {
                "replicaScheduling": {
                    "replicaSchedulingType": "Duplicated",
                    "weightPreference": {
                        "staticWeightList": [{"targetCluster": {}, "weight": 1}],
                        "dynamicWeight": "AvailableReplicas",
                    },
                }
            }
        },
        id="weights with Duplicated, static with dynamic",
    ),
    pytest.param(
        {
            "placement": {
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                }
            }
        },
        id="Weighted without weightPreference",
    ),
    pytest.param(
        {
            "placement": {
                "replicaScheduling": {
                    "replicaSchedulingType": "Duplicated",
                    "replicaDivisionPreference": "Aggregated",
                    "weightPreference": {"dynamicWeight": "x"},
                }
            }
        },
        id="preference with Duplicated, Aggregated with weights, unknown dynamic weight",
    ),
    pytest.param(
        {"placement": {"replicaScheduling": {"replicaSchedulingType": "Spread"}}}, id="unknown type"
    ),
    pytest.param(
        {
            "placement": {
                "clusterTolerations": [
                    {
                        "key": "!!",
                        "operator": "Bogus",
                        "value": "~",
                        "effect": "Nope",
                        "tolerationSeconds": -5,
                    },
                    {"operator": "Exists"},
                    {"operator": "Equal"},
                    {"operator": ""},
                    {"operator": "LT"},
                ]
            }
        },
        id="any toleration but Lt/Gt",
    ),
    pytest.param(
        {
            "resourceSelectors": [
                {
                    "apiVersion": "",
                    "kind": "",
                    "namespace": "default",
                    "labelSelector": {
                        "matchLabels": {"bad key!": "bad value!"},
                        "matchExpressions": [{"key": "", "operator": "Bogus"}],
                    },
                }
            ],
            "placement": {
                "clusterAffinity": {
                    "labelSelector": {
                        "matchExpressions": [{"key": "x y", "operator": "Whatever", "values": ["!"]}]
                    },
                    "clusterNames": ["nope", "nope"],
                    "exclude": ["!"],
                }
            },
        },
        id="selector contents and cluster names",
    ),
    pytest.param(
        {"placement": {"spreadConstraints": [{"spreadByLabel": "not a label key!"}]}},
        id="spreadByLabel format",
    ),
    pytest.param(
        {"placement": {"spreadConstraints": [{"spreadByField": "datacenter"}, {"spreadByField": "cluster"}]}},
        id="unknown spreadByField with cluster",
    ),
    pytest.param(
        {
            "priority": -2147483648,
            "preemption": "Sometimes",
            "conflictResolution": "Maybe",
            "activationPreference": "Eager",
            "schedulerName": "",
            "dependentOverrides": ["x", "x"],
            "schedulePriority": {"priorityClassSource": "Other", "priorityClassName": ""},
            "association": True,
            "preserveResourcesOnDeletion": False,
        },
        id="enums and priority range",
    ),
    pytest.param(
        {"suspension": {"dispatching": False, "dispatchingOnClusters": {"clusterNames": ["m"]}}},
        id="dispatching false with cluster names",
    ),
    pytest.param(
        {"failover": {"cluster": {"purgeMode": "Never", "statePreservation": {"rules": []}}}},
        id="cluster failover contents",
    ),
    pytest.param({"resourceSelectors": None, "placement": None}, id="nulls"),
    pytest.param({}, id="empty spec"),
]


@pytest.mark.parametrize("kind", [PP, CPP])
@pytest.mark.parametrize("spec", ACCEPTED)
def test_s65_not_validated(kind: str, spec: dict[str, Any]) -> None:
    assert verdict(spec, kind=kind) is None


# --- §5: mutating rules -------------------------------------------------------------------

UUID_V4 = r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"


def mutated_spec(
    spec: dict[str, Any], *, kind: str = PP, operation: str = "UPDATE", namespace: str | None = None
) -> dict[str, Any]:
    """The spec after mutation (UPDATE by default, so metadata stays out of the way)."""
    return dict(mutated(a_policy(spec, kind=kind), operation=operation, namespace=namespace).get("spec", {}))


@pytest.mark.parametrize(
    ("selectors", "expected"),
    [
        pytest.param(
            [{"apiVersion": "v1", "kind": "A"}],
            [{"apiVersion": "v1", "kind": "A", "namespace": "req-ns"}],
            id="absent namespace",
        ),
        pytest.param(
            [
                {"apiVersion": "v1", "kind": "A", "namespace": ""},
                {"apiVersion": "v1", "kind": "B", "namespace": "other"},
                {},
            ],
            [
                {"apiVersion": "v1", "kind": "A", "namespace": "req-ns"},
                {"apiVersion": "v1", "kind": "B", "namespace": "other"},
                {"namespace": "req-ns"},
            ],
            id="empty filled, explicit kept, empty selector filled",
        ),
    ],
)
def test_m1_selector_namespace_from_the_request(
    selectors: list[dict[str, Any]], expected: list[dict[str, Any]]
) -> None:
    spec = mutated_spec({"resourceSelectors": selectors}, namespace="req-ns")
    assert spec["resourceSelectors"] == expected
    # No M1 for CPP: selector namespaces stay as written.
    cpp = mutated_spec({"resourceSelectors": selectors}, kind=CPP)
    assert cpp.get("resourceSelectors") == check.prune_zero({"s": selectors})["s"]


@pytest.mark.parametrize("kind", [PP, CPP])
@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        pytest.param({}, {"spreadByField": "cluster", "minGroups": 1}, id="M2 M3 empty"),
        pytest.param(
            {"spreadByLabel": "rack"}, {"spreadByLabel": "rack", "minGroups": 1}, id="M2 not with a label"
        ),
        pytest.param(
            {"spreadByField": "region", "minGroups": 0, "maxGroups": 2},
            {"spreadByField": "region", "minGroups": 1, "maxGroups": 2},
            id="M3 explicit zero",
        ),
        pytest.param(
            {"spreadByField": "", "spreadByLabel": "", "minGroups": -2},
            {"spreadByField": "cluster", "minGroups": -2},
            id="M2 empty strings, M3 keeps negatives",
        ),
        pytest.param(
            {"spreadByField": "zone", "minGroups": 3},
            {"spreadByField": "zone", "minGroups": 3},
            id="set values kept",
        ),
    ],
)
def test_m2_m3_spread_defaults(kind: str, constraint: dict[str, Any], expected: dict[str, Any]) -> None:
    spec = mutated_spec(
        {"placement": {"spreadConstraints": [constraint, {"spreadByLabel": "x", "minGroups": 2}]}}, kind=kind
    )
    assert spec["placement"]["spreadConstraints"] == [expected, {"spreadByLabel": "x", "minGroups": 2}]


@pytest.mark.parametrize("kind", [PP, CPP])
@pytest.mark.parametrize(
    ("selectors", "propagate"),
    [
        pytest.param(
            [
                {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default"},
                {
                    "apiVersion": "multicluster.x-k8s.io/v1alpha1",
                    "kind": "ServiceImport",
                    "namespace": "default",
                },
            ],
            True,
            id="M4 any selector",
        ),
        pytest.param(
            [
                {
                    "apiVersion": "multicluster.x-k8s.io/v1alpha2",
                    "kind": "ServiceImport",
                    "namespace": "default",
                }
            ],
            None,
            id="M4 exact apiVersion",
        ),
        pytest.param(
            [
                {
                    "apiVersion": "multicluster.x-k8s.io/v1alpha1",
                    "kind": "serviceimport",
                    "namespace": "default",
                }
            ],
            None,
            id="M4 exact kind",
        ),
    ],
)
def test_m4_service_import_sets_propagate_deps(
    kind: str, selectors: list[dict[str, Any]], propagate: bool | None
) -> None:
    spec = mutated_spec({"resourceSelectors": selectors, "propagateDeps": False}, kind=kind)
    assert spec.get("propagateDeps") is propagate


@pytest.mark.parametrize("kind", [PP, CPP])
@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        pytest.param(
            {"replicaSchedulingType": "Divided"},
            {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"},
            id="M5 divided",
        ),
        pytest.param(
            {"replicaSchedulingType": "Divided", "replicaDivisionPreference": ""},
            {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"},
            id="M5 empty preference",
        ),
        pytest.param(
            {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"},
            {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"},
            id="M5 keeps a set one",
        ),
        pytest.param({}, {}, id="M5 absent type does not count"),
        pytest.param(
            {"replicaSchedulingType": "Duplicated"},
            {"replicaSchedulingType": "Duplicated"},
            id="M5 duplicated",
        ),
        pytest.param(
            {"replicaSchedulingType": "divided"}, {"replicaSchedulingType": "divided"}, id="M5 literal"
        ),
    ],
)
def test_m5_division_preference(kind: str, strategy: dict[str, Any], expected: dict[str, Any]) -> None:
    placement = mutated_spec({"placement": {"replicaScheduling": strategy}}, kind=kind).get("placement", {})
    assert placement.get("replicaScheduling", {}) == expected


def test_m5_never_creates_replica_scheduling_and_nothing_else_is_defaulted() -> None:
    spec = mutated_spec({"resourceSelectors": [{"apiVersion": "v1", "kind": "A", "namespace": "default"}]})
    assert spec == {"resourceSelectors": [{"apiVersion": "v1", "kind": "A", "namespace": "default"}]}


@pytest.mark.parametrize("kind", [PP, CPP])
@pytest.mark.parametrize(
    ("application", "grace"),
    [
        pytest.param({"purgeMode": "Gracefully"}, 600, id="M6 default"),
        pytest.param({"purgeMode": "Gracefully", "gracePeriodSeconds": None}, 600, id="M6 null is absent"),
        pytest.param({"purgeMode": "Gracefully", "gracePeriodSeconds": -1}, -1, id="M6 keeps a set value"),
        pytest.param({"purgeMode": "Directly", "gracePeriodSeconds": 60}, 60, id="M6 never clears"),
        pytest.param({"purgeMode": "Never"}, None, id="M6 other modes"),
        pytest.param({}, None, id="M6 absent mode does not count"),
        pytest.param({"purgeMode": "gracefully"}, None, id="M6 literal"),
    ],
)
def test_m6_grace_period(kind: str, application: dict[str, Any], grace: int | None) -> None:
    spec = mutated_spec(
        {"failover": {"application": {"decisionConditions": {"tolerationSeconds": 5}, **application}}},
        kind=kind,
    )
    assert spec["failover"]["application"].get("gracePeriodSeconds") == grace


@pytest.mark.parametrize(
    ("kind", "label", "finalizer"),
    [
        pytest.param(PP, PP_LABEL, PP_FINALIZER, id="PP"),
        pytest.param(CPP, CPP_LABEL, CPP_FINALIZER, id="CPP"),
    ],
)
@pytest.mark.parametrize(
    ("labels", "finalizers", "want_finalizers"),
    [
        pytest.param(None, None, ["F"], id="no labels no finalizers"),
        pytest.param({"app": "x"}, ["a", "b"], ["a", "b", "F"], id="appended after existing"),
        pytest.param({"L": "client-set"}, ["F", "z"], ["F", "z"], id="present finalizer not repeated"),
        pytest.param({"L": ""}, [], ["F"], id="empty values"),
    ],
)
def test_m7_m8_on_create(
    kind: str,
    label: str,
    finalizer: str,
    labels: dict[str, str] | None,
    finalizers: list[str] | None,
    want_finalizers: list[str],
) -> None:
    import re

    meta_labels = None if labels is None else {(label if k == "L" else k): v for k, v in labels.items()}
    obj = a_policy({}, kind=kind, labels={})
    obj["metadata"]["labels"] = meta_labels
    if finalizers is not None:
        finalizers = [finalizer if f == "F" else f for f in finalizers]
        obj["metadata"]["finalizers"] = finalizers
    got = mutated(obj, operation="CREATE")["metadata"]
    new_id = got["labels"].pop(label)
    assert re.match(UUID_V4, new_id) and new_id != (meta_labels or {}).get(label)
    assert got.get("labels", {}) == {k: v for k, v in (meta_labels or {}).items() if k != label and v}
    assert got["finalizers"] == [finalizer if f == "F" else f for f in want_finalizers]
    # M7/M8 are CREATE only: an UPDATE leaves labels and finalizers as sent.
    updated = mutated(obj, operation="UPDATE")["metadata"]
    assert updated.get("labels", {}) == {k: v for k, v in (meta_labels or {}).items() if v}
    assert updated.get("finalizers") == (finalizers or None)


def test_m7_fresh_id_per_request() -> None:
    obj = a_policy({})
    first = mutated(obj)["metadata"]["labels"][PP_LABEL]
    second = mutated(obj)["metadata"]["labels"][PP_LABEL]
    assert first != second


def test_s55_net_effect_example() -> None:
    obj = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
            "placement": {
                "clusterAffinity": {"clusterNames": ["member1", "member2"]},
                "replicaScheduling": {"replicaSchedulingType": "Divided"},
                "spreadConstraints": [{"maxGroups": 2}],
            },
        },
    }
    got = mutated(obj)
    assert got["metadata"]["finalizers"] == [PP_FINALIZER]
    assert set(got["metadata"]["labels"]) == {PP_LABEL}
    assert got["spec"] == {
        "resourceSelectors": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx", "namespace": "default"}
        ],
        "placement": {
            "clusterAffinity": {"clusterNames": ["member1", "member2"]},
            "replicaScheduling": {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
            },
            "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2, "minGroups": 1}],
        },
    }


def test_mutation_does_not_validate() -> None:
    obj = a_policy({"placement": {"clusterTolerations": [{"operator": "Lt"}]}}, labels={})
    assert mutated(obj)["spec"] == {"placement": {"clusterTolerations": [{"operator": "Lt"}]}}


def test_s32_patch_is_against_the_reserialized_typed_object() -> None:
    # Fields the Go type does not know disappear, as they do from Karmada's json.Marshal output;
    # everything known and non-zero is kept as sent.
    spec = {
        "unknown": {"x": 1},
        "placement": {"Clusteraffinity": {}, "clusterAffinity": {"clusterNames": ["a"], "extra": 1}},
        "resourceSelectors": [{"apiVersion": "v1", "kind": "A", "namespace": "default", "field": "x"}],
    }
    assert mutated_spec(spec) == {
        "placement": {"clusterAffinity": {"clusterNames": ["a"]}},
        "resourceSelectors": [{"apiVersion": "v1", "kind": "A", "namespace": "default"}],
    }


# --- §3.1: decoding ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"placement": "x"},
            "json: cannot unmarshal string into Go struct field PropagationSpec.spec.placement "
            "of type v1alpha1.Placement",
            id="struct as string",
        ),
        pytest.param(
            {"resourceSelectors": {}},
            "json: cannot unmarshal object into Go struct field "
            "PropagationSpec.spec.resourceSelectors of type []v1alpha1.ResourceSelector",
            id="list as object",
        ),
        pytest.param(
            {"placement": {"clusterAffinities": [{"affinityName": 5}]}},
            "json: cannot unmarshal number into Go struct field ClusterAffinityTerm.spec.placement."
            "clusterAffinities.affinityName of type string",
            id="list element field, no index",
        ),
        pytest.param(
            {"placement": {"clusterAffinities": [{"affinityName": "a", "clusterNames": "m"}]}},
            "json: cannot unmarshal string into Go struct field ClusterAffinityTerm.spec.placement."
            "clusterAffinities.clusterNames of type []string",
            id="inline field belongs to the term",
        ),
        pytest.param(
            {"placement": {"spreadConstraints": [{"maxGroups": 1.5}]}},
            "json: cannot unmarshal number 1.5 into Go struct field SpreadConstraint.spec.placement."
            "spreadConstraints.maxGroups of type int",
            id="float into int",
        ),
        pytest.param(
            {"placement": {"spreadConstraints": [{"maxGroups": 2.0}]}},
            "json: cannot unmarshal number 2.0 into Go struct field SpreadConstraint.spec.placement."
            "spreadConstraints.maxGroups of type int",
            id="integral float literal into int",
        ),
        pytest.param(
            {"priority": 2147483648},
            "json: cannot unmarshal number 2147483648 into Go struct field "
            "PropagationSpec.spec.priority of type int32",
            id="int32 overflow",
        ),
        pytest.param(
            {"placement": {"spreadConstraints": [{"spreadByField": 1}]}},
            "json: cannot unmarshal number into Go struct field SpreadConstraint.spec.placement."
            "spreadConstraints.spreadByField of type v1alpha1.SpreadFieldValue",
            id="named string type",
        ),
        pytest.param(
            {"placement": {"clusterTolerations": [{"tolerationSeconds": "30"}]}},
            "json: cannot unmarshal string into Go struct field Toleration.spec.placement.clusterTolerations."
            "tolerationSeconds of type int64",
            id="pointer reports its element type",
        ),
        pytest.param(
            {"propagateDeps": "true"},
            "json: cannot unmarshal string into Go struct field "
            "PropagationSpec.spec.propagateDeps of type bool",
            id="bool as string",
        ),
        pytest.param(
            {"failover": {"application": {"decisionConditions": {"tolerationSeconds": True}}}},
            "json: cannot unmarshal bool into Go struct field DecisionConditions.spec.failover.application."
            "decisionConditions.tolerationSeconds of type int32",
            id="bool into int32",
        ),
        pytest.param(
            {"suspension": {"dispatching": 1}},
            "json: cannot unmarshal number into Go struct field "
            "Suspension.spec.suspension.dispatching of type bool",
            id="pointer bool",
        ),
        pytest.param(
            {"placement": {"clusterAffinity": {"labelSelector": {"matchLabels": {"a": 1}}}}},
            "json: cannot unmarshal number into Go struct field LabelSelector.spec.placement.clusterAffinity."
            "labelSelector.matchLabels of type string",
            id="map value, no key in the path",
        ),
    ],
)
@pytest.mark.parametrize("hook", ["validating", "mutating"])
def test_s31_decode_errors_are_400_with_gos_message(spec: dict[str, Any], message: str, hook: str) -> None:
    response = send(a_policy(spec), hook)
    assert response["allowed"] is False
    assert response["status"]["code"] == 400 and "reason" not in response["status"]
    assert response["status"]["message"] == message


@pytest.mark.parametrize("hook", ["validating", "mutating"])
def test_s31_wrong_metadata_types_and_old_object(hook: str) -> None:
    obj = a_policy({})
    obj["metadata"]["labels"] = {PP_LABEL: 1}
    response = send(obj, hook)
    assert (response["allowed"], response["status"]["code"]) == (False, 400)
    assert response["status"]["message"] == (
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
    )
    if hook == "validating":
        bad_old = a_policy({"placement": {"clusterAffinities": "x"}})
        response = send(a_policy({}), hook, operation="UPDATE", old=bad_old)
        assert (response["allowed"], response["status"]["code"]) == (False, 400)
        assert "clusterAffinities" in response["status"]["message"]


def test_s31_nulls_are_zero_values_not_errors() -> None:
    spec = {
        "resourceSelectors": [None],
        "placement": {
            "clusterAffinities": [None],
            "clusterTolerations": None,
            "spreadConstraints": [{"maxGroups": None}],
        },
        "priority": None,
        "failover": None,
        "suspension": None,
        "propagateDeps": None,
    }
    message = verdict(spec)
    assert message == many(
        one("spec.placement.clusterAffinities[0]", f'Invalid value: "": {NAME_EMPTY}'),
        one("spec.placement.clusterAffinities[0]", f'Invalid value: "": {NAME_PATTERN}'),
        one("spec.resourceSelectors[0].namespace", f'Invalid value: "": {NAMESPACE_MISMATCH}'),
    )


# --- §6.4: the worked examples, verbatim --------------------------------------------------


def test_s64_worked_examples() -> None:
    assert verdict(
        {
            "placement": {
                "clusterAffinity": {"clusterNames": ["member1"]},
                "clusterAffinities": [{"affinityName": "primary", "clusterNames": ["member2"]}],
            }
        }
    ) == (
        'spec.placement: Invalid value: {"clusterAffinity":{"clusterNames":["member1"]},"clusterAffinities":'
        '[{"affinityName":"primary","clusterNames":["member2"]}]}: clusterAffinities cannot co-exist with '
        "clusterAffinity"
    )
    assert verdict(
        {
            "placement": {
                "clusterTolerations": [{"key": "k", "operator": "Lt", "value": "1", "effect": "NoSchedule"}]
            }
        }
    ) == (
        'spec.placement.clusterTolerations[0].operator: Unsupported value: "Lt": '
        'supported values: "", "Exists", "Equal"'
    )
    assert verdict(
        {"placement": {"clusterAffinities": [{"affinityName": "a b", "clusterNames": ["m"]}]}}
    ) == (f'spec.placement.clusterAffinities[0]: Invalid value: "a b": {NAME_PATTERN}')


# --- §5.3 and §8: bindings ----------------------------------------------------------------


def a_binding(
    kind: str = "ResourceBinding",
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    components: list[Any] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "b", "namespace": "default"}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {"resource": {"apiVersion": "v1", "kind": "Pod", "name": "p"}}
    if components is not None:
        spec["components"] = components
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": kind, "metadata": meta, "spec": spec}


def binding_call(
    path: str, obj: dict[str, Any], operation: str = "CREATE", settings: review.Settings | None = None
) -> dict[str, Any]:
    request = {"uid": "b-uid", "operation": operation, "object": obj, "namespace": "default"}
    if operation == "UPDATE":
        request["oldObject"] = obj
    sent = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    response = review.handle(path, json.dumps(sent).encode(), "application/json", settings=settings).review[
        "response"
    ]
    assert response["uid"] == "b-uid"
    return dict(response)


DEPENDENCIES = "resourcebinding.karmada.io/dependencies"


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        pytest.param("[]", True, id="empty array"),
        pytest.param("null", True, id="null"),
        pytest.param(
            '[{"apiVersion":"v1","kind":"Secret","namespace":"default","name":"s",'
            '"labelSelector":{"matchLabels":{"a":"b"}}}]',
            True,
            id="references",
        ),
        pytest.param("", False, id="empty string"),
        pytest.param("{}", False, id="object"),
        pytest.param("[1]", False, id="wrong element type"),
        pytest.param('[{"kind":5}]', False, id="wrong field type"),
        pytest.param("[] trailing", False, id="not JSON"),
    ],
)
def test_r1_dependencies_annotation(value: str, allowed: bool) -> None:
    response = binding_call("/validate-resourcebinding", a_binding(annotations={DEPENDENCIES: value}))
    assert response["allowed"] is allowed
    if not allowed:
        assert response["status"] == {
            "metadata": {},
            "code": 403,
            "reason": "Forbidden",
            "message": (
                f"metadata.annotations.{DEPENDENCIES}: Invalid value: {json_quote(value)}: "
                "annotation value must be a valid JSON"
            ),
        }
    # R1 is checked on UPDATE too.
    assert (
        binding_call("/validate-resourcebinding", a_binding(annotations={DEPENDENCIES: value}), "UPDATE")[
            "allowed"
        ]
        is allowed
    )


def test_r3_r4_component_names_only_behind_the_gate() -> None:
    components = [
        {"name": "a", "replicas": 1},
        {"name": "", "replicas": 1},
        {"name": "a", "replicas": 1},
        {"name": "b", "replicas": 1},
        {"name": "b", "replicas": 1},
    ]
    off = binding_call("/validate-resourcebinding", a_binding(components=components))
    assert off["allowed"] is True
    on = binding_call(
        "/validate-resourcebinding",
        a_binding(components=components),
        settings=review.Settings(multiple_pod_templates=True),
    )
    assert on["allowed"] is False and on["status"]["code"] == 403
    assert on["status"]["message"] == many(
        'spec.components[1].name: Invalid value: "": component names must be non-empty',
        'spec.components[2].name: Invalid value: "a": component names must be unique',
        'spec.components[4].name: Invalid value: "b": component names must be unique',
    )


@pytest.mark.parametrize(
    ("kind", "path", "label"),
    [
        pytest.param(
            "ResourceBinding", "/mutate-resourcebinding", "resourcebinding.karmada.io/permanent-id", id="M9"
        ),
        pytest.param(
            "ClusterResourceBinding",
            "/mutate-clusterresourcebinding",
            "clusterresourcebinding.karmada.io/permanent-id",
            id="M10",
        ),
    ],
)
@pytest.mark.parametrize(
    ("labels", "kept"),
    [
        pytest.param(None, False, id="absent"),
        pytest.param({"L": ""}, False, id="empty"),
        pytest.param({"L": "given", "x": "y"}, True, id="set value kept"),
    ],
)
def test_m9_m10_binding_permanent_id(
    kind: str, path: str, label: str, labels: dict[str, str] | None, kept: bool
) -> None:
    import re

    sent_labels = None if labels is None else {(label if k == "L" else k): v for k, v in labels.items()}
    obj = a_binding(kind, labels=sent_labels)
    response = binding_call(path, obj)
    assert response["allowed"] is True and response["status"]["code"] == 200
    ops = json.loads(base64.b64decode(response["patch"])) if response.get("patch") else []
    got = check.apply_patch(obj, ops)["metadata"].get("labels", {})
    if kept:
        assert ops == [] and got == sent_labels
    else:
        assert re.match(UUID_V4, got[label])
    # CREATE only.
    assert "patch" not in binding_call(path, obj, "UPDATE")


# --- generated policies against an independent reading of the spec ------------------------
# Policies drawn from the value domain of the conformance generator's random-NNNN cases (names,
# operators, purge modes, odd strings with < & >, negative numbers, empty and null lists), checked
# against spec_model, a separate implementation of §4/§5/§6 written for this audit.

AFFINITY_NAMES = [
    "",
    "east",
    "group1",
    "G1",
    "tier.2",
    "tier:1",
    "tier-1",
    "example.com/tier-1",
    "spill.example.com/b",
    "prefix/",
    "a" * 64,
    "INVALID KEY!",
    "bad-",
    "overflow-1",
    "primary",
    "a/b/c",
    "Ex.com/y",
    "x" * 254 + "/y",
]
MEMBERS = ["member1", "member2", "member3", "member4"]


class PolicyGenerator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def coin(self, p: float = 0.5) -> bool:
        return self.rng.random() < p

    def pick(self, values: list[Any]) -> Any:
        return self.rng.choice(values)

    def some(self, make: Any, high: int = 3) -> list[Any]:
        return [make() for _ in range(self.rng.randint(0, high))]

    def expression(self) -> dict[str, Any]:
        out = {
            "key": self.pick(["zone", "region", "provider", "foo", "", "Zone"]),
            "operator": self.pick(["In", "NotIn", "Exists", "in", "DoesNotExist", ""]),
        }
        if self.coin():
            out["values"] = self.some(lambda: self.pick(["us-east", "zone-a", "fooCloud", "<x>&"]), 2)
        return out

    def affinity(self, named: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"affinityName": self.pick(AFFINITY_NAMES)} if named else {}
        if self.coin(0.3):
            out["labelSelector"] = (
                {}
                if self.coin()
                else {
                    "matchLabels": {self.pick(["env", "a&b"]): self.pick(["dev", ""])},
                    "matchExpressions": [
                        {"key": "region", "operator": self.pick(["In", "Exists"]), "values": ["us"]}
                    ],
                }
            )
        if self.coin(0.4):
            out["fieldSelector"] = {"matchExpressions": self.some(self.expression)}
        if self.coin(0.6):
            out["clusterNames"] = self.some(lambda: self.pick(MEMBERS))
        if self.coin(0.3):
            out["exclude"] = self.some(lambda: self.pick(MEMBERS), 2)
        return out

    def term(self) -> dict[str, Any]:
        out = self.affinity(named=True)
        if self.coin():
            out["overflowAffinities"] = self.some(lambda: self.affinity(named=True))
        return out

    def toleration(self) -> dict[str, Any]:
        out = {
            k: self.pick(v)
            for k, v in (
                ("key", ["", "gpu"]),
                ("operator", ["Equal", "Exists", "exists", "Lt", "Gt", ""]),
                ("value", ["", "100"]),
                ("effect", ["NoSchedule", "Bogus"]),
            )
            if self.coin(0.7)
        }
        if self.coin(0.4):
            out["tolerationSeconds"] = self.pick([-10, 0, 300])
        return out

    def spread(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.coin(0.6):
            out["spreadByField"] = self.pick(["cluster", "region", "zone", "provider", "datacenter", ""])
        if self.coin(0.3):
            out["spreadByLabel"] = self.pick(["rack", "team<a>", "zone&rack", ""])
        if self.coin(0.6):
            out["maxGroups"] = self.pick([-1, 0, 1, 2, 5])
        if self.coin(0.6):
            out["minGroups"] = self.pick([-2, 0, 1, 4])
        return out

    def strategy(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.coin(0.7):
            out["replicaSchedulingType"] = self.pick(["Divided", "Duplicated", "Spread"])
        if self.coin(0.6):
            out["replicaDivisionPreference"] = self.pick(["Aggregated", "Weighted"])
        if self.coin():
            weights: dict[str, Any] = {}
            if self.coin():
                weights["dynamicWeight"] = self.pick(["AvailableReplicas", ""])
            if self.coin():
                weights["staticWeightList"] = self.some(
                    lambda: {"targetCluster": self.affinity(), "weight": self.pick([-1, 0, 1, 10])}
                )
            out["weightPreference"] = weights
        return out

    def spec(self, namespace: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.coin(0.8):
            out["resourceSelectors"] = self.some(
                lambda: {
                    k: v
                    for k, v in {
                        "apiVersion": self.pick(["apps/v1", "multicluster.x-k8s.io/v1alpha1"]),
                        "kind": self.pick(["Deployment", "ServiceImport"]),
                        "namespace": self.pick([namespace, namespace, "other", ""]),
                        "name": self.pick(["nginx", ""]),
                    }.items()
                    if self.coin(0.85)
                }
            )
        if self.coin(0.3):
            out["preemption"] = self.pick(["Always", "Never"])
        if self.coin(0.3):
            out["propagateDeps"] = self.coin()
        placement: dict[str, Any] = {}
        if self.coin():
            placement["clusterAffinity"] = self.affinity()
        if self.coin():
            placement["clusterAffinities"] = (
                self.pick([None, []]) if self.coin(0.15) else self.some(self.term, 4)
            )
        if self.coin(0.4):
            placement["clusterTolerations"] = self.some(self.toleration, 4)
        if self.coin(0.4):
            placement["spreadConstraints"] = self.some(self.spread)
        if self.coin():
            placement["replicaScheduling"] = self.strategy()
        if self.coin(0.2):
            placement["workloadAffinity"] = {
                k: {"groupByLabelKey": self.pick(["app", "INVALID KEY!", ""])}
                for k in ("affinity", "antiAffinity")
                if self.coin(0.7)
            }
        if placement or self.coin():
            out["placement"] = placement
        if self.coin(0.3):
            failover: dict[str, Any] = {}
            if self.coin(0.7):
                app: dict[str, Any] = {"decisionConditions": {"tolerationSeconds": self.pick([-5, 0, 300])}}
                if self.coin(0.7):
                    app["purgeMode"] = self.pick(["Gracefully", "Directly", "Never"])
                if self.coin():
                    app["gracePeriodSeconds"] = self.pick([-1, 0, 60])
                if self.coin(0.3):
                    app["statePreservation"] = {
                        "rules": self.some(
                            lambda: {
                                "aliasLabelName": self.pick(["replicas", "bad-", "a/b/c"]),
                                "jsonPath": "x",
                            },
                            2,
                        )
                    }
                failover["application"] = app
            if self.coin():
                failover["cluster"] = {
                    "purgeMode": "Directly",
                    "statePreservation": {
                        "rules": self.some(
                            lambda: {
                                "aliasLabelName": self.pick(["ready_count", "-invalid"]),
                                "jsonPath": "x",
                            },
                            2,
                        )
                    },
                }
            out["failover"] = failover
        if self.coin(0.15):
            out["suspension"] = {
                "dispatching": self.coin(),
                "dispatchingOnClusters": {"clusterNames": self.some(lambda: self.pick(MEMBERS), 2)},
            }
        return out


@pytest.mark.parametrize("seed", range(4))
def test_generated_policies_agree_with_an_independent_reading_of_the_spec(seed: int) -> None:
    gen = PolicyGenerator(seed)
    for _ in range(150):
        kind = gen.pick([PP, CPP])
        namespace = gen.pick(["default", "team-a"])
        spec = gen.spec(namespace)
        label, finalizer = (PP_LABEL, PP_FINALIZER) if kind == PP else (CPP_LABEL, CPP_FINALIZER)
        obj = a_policy(spec, kind=kind, namespace=namespace)
        context = json.dumps(spec)
        response = send(obj, "validating")
        message = None if response["allowed"] else response["status"]["message"]
        assert message == spec_model.validate(spec, namespaced=kind == PP, request_namespace=namespace), (
            context
        )
        operation = gen.pick(["CREATE", "UPDATE"])
        got = mutated(obj, operation=operation)
        if operation == "CREATE":
            assert got["metadata"]["labels"][label] != "id-1"
            got["metadata"]["labels"][label] = "<generated>"
        want = spec_model.mutate(
            obj,
            namespaced=kind == PP,
            request_namespace=namespace,
            create=operation == "CREATE",
            label=label,
            finalizer=finalizer,
        )
        assert check.first_difference(check.prune_zero(want), got) is None, context
