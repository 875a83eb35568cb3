"""Property tests: generated policies and malformed bodies through ``review.handle``.

Invariants: every answer is an AdmissionReview echoing the request uid; the validating answer
agrees with the pure rules (a decode failure is never allowed); a mutating patch applies, and
mutating the result again changes nothing; no body makes ``handle`` raise or allow by accident.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.webhook import review, rules, schema

from .builders import CPP_LABEL, PP_LABEL, a_review, body, conformance_checker

check = conformance_checker()

NAMES = st.sampled_from(["", "a", "g1", "tier.2", "example.com/x", "bad name", "-x", "a/b/c", "Ex.com/y",
                         "a" * 64,
                         "prefix/", "é"])
MEMBERS = st.lists(st.sampled_from(["m1", "m2", "m3"]), max_size=3)
FIELD_EXPR = st.fixed_dictionaries({"key": st.sampled_from(["zone", "region", "provider", "foo", ""]),
                                    "operator": st.sampled_from(["In", "NotIn", "Exists", "in"])},
                                   optional={"values": st.lists(st.sampled_from(["x", "<y>"]), max_size=2)})
SELECTOR = st.one_of(st.just({}), st.fixed_dictionaries({}, optional={
    "matchLabels": st.dictionaries(st.sampled_from(["a", "b&c"]), st.sampled_from(["", "v"]), max_size=2),
    "matchExpressions": st.lists(st.fixed_dictionaries({"key": st.just("k"), "operator": st.just("In")}),
                                 max_size=1)}))
AFFINITY_FIELDS = {"labelSelector": SELECTOR,
                   "fieldSelector": st.fixed_dictionaries({}, optional={
                       "matchExpressions": st.lists(FIELD_EXPR, max_size=2)}),
                   "clusterNames": MEMBERS, "exclude": MEMBERS}
AFFINITY = st.fixed_dictionaries({}, optional=AFFINITY_FIELDS)
OVERFLOW = st.fixed_dictionaries({"affinityName": NAMES}, optional=AFFINITY_FIELDS)
TERM = st.fixed_dictionaries({"affinityName": NAMES},
                             optional={**AFFINITY_FIELDS,
                                       "overflowAffinities": st.lists(OVERFLOW, max_size=2)})
SPREAD = st.fixed_dictionaries({}, optional={
    "spreadByField": st.sampled_from(["cluster", "region", "zone", "provider", "datacenter", ""]),
    "spreadByLabel": st.sampled_from(["", "rack", "zone<a>"]),
    "maxGroups": st.integers(-2, 3), "minGroups": st.integers(-2, 3)})
TOLERATION = st.fixed_dictionaries({}, optional={
    "key": st.sampled_from(["", "gpu"]),
    "operator": st.sampled_from(["", "Exists", "Equal", "Lt", "Gt", "x"]),
    "value": st.sampled_from(["", "1"]), "effect": st.sampled_from(["", "NoSchedule"]),
    "tolerationSeconds": st.integers(-5, 5)})
STRATEGY = st.fixed_dictionaries({}, optional={
    "replicaSchedulingType": st.sampled_from(["Divided", "Duplicated", ""]),
    "replicaDivisionPreference": st.sampled_from(["Aggregated", "Weighted", ""]),
    "weightPreference": st.fixed_dictionaries({}, optional={
        "dynamicWeight": st.sampled_from(["AvailableReplicas", ""]),
        "staticWeightList": st.lists(st.fixed_dictionaries({"targetCluster": AFFINITY,
                                                            "weight": st.integers(-1, 3)}), max_size=2)})})
WORKLOAD_TERM = st.fixed_dictionaries({"groupByLabelKey": NAMES})
PLACEMENT = st.fixed_dictionaries({}, optional={
    "clusterAffinity": st.one_of(st.none(), AFFINITY),
    "clusterAffinities": st.one_of(st.none(), st.lists(TERM, max_size=3)),
    "clusterTolerations": st.lists(TOLERATION, max_size=3),
    "spreadConstraints": st.lists(SPREAD, max_size=3),
    "replicaScheduling": STRATEGY,
    "workloadAffinity": st.fixed_dictionaries({}, optional={"affinity": WORKLOAD_TERM,
                                                            "antiAffinity": WORKLOAD_TERM})})
RESOURCE_SELECTOR = st.fixed_dictionaries({}, optional={
    "apiVersion": st.sampled_from(["apps/v1", "multicluster.x-k8s.io/v1alpha1", ""]),
    "kind": st.sampled_from(["Deployment", "ServiceImport"]),
    "namespace": st.sampled_from(["", "default", "other"]), "name": st.sampled_from(["", "web"])})
RULE = st.fixed_dictionaries({"aliasLabelName": NAMES, "jsonPath": st.just("{.a}")})
RULES = st.fixed_dictionaries({"rules": st.lists(RULE, max_size=2)})
FAILOVER = st.fixed_dictionaries({}, optional={
    "application": st.fixed_dictionaries({"decisionConditions": st.fixed_dictionaries({}, optional={
        "tolerationSeconds": st.integers(-3, 400)})}, optional={
        "purgeMode": st.sampled_from(["Gracefully", "Directly", "Never"]),
        "gracePeriodSeconds": st.integers(-2, 700), "statePreservation": RULES}),
    "cluster": st.fixed_dictionaries({}, optional={"purgeMode": st.sampled_from(["Gracefully", "Directly"]),
                                                   "statePreservation": RULES})})
WRONG_TYPE = st.one_of(st.integers(), st.text(max_size=3), st.booleans(), st.lists(st.integers(), max_size=1))
SPEC = st.fixed_dictionaries({}, optional={
    "resourceSelectors": st.lists(RESOURCE_SELECTOR, max_size=3),
    "placement": PLACEMENT,
    "propagateDeps": st.booleans(),
    "preemption": st.sampled_from(["Always", "Never", ""]),
    "schedulerName": st.sampled_from(["", "default-scheduler", "other"]),
    "failover": FAILOVER,
    "suspension": st.fixed_dictionaries({}, optional={
        "dispatching": st.booleans(),
        "dispatchingOnClusters": st.fixed_dictionaries({}, optional={"clusterNames": MEMBERS})}),
    "priority": st.integers(-(2**31), 2**31 - 1),
    "unknownField": st.integers(),
})


@st.composite
def policies(draw: st.DrawFn, *, wrong_types: bool = False) -> dict[str, Any]:
    kind = draw(st.sampled_from(["PropagationPolicy", "ClusterPropagationPolicy"]))
    label = PP_LABEL if kind == "PropagationPolicy" else CPP_LABEL
    metadata: dict[str, Any] = {"name": "p"}
    if kind == "PropagationPolicy":
        metadata["namespace"] = draw(st.sampled_from(["default", "other"]))
    if draw(st.booleans()):
        metadata["labels"] = {label: draw(st.sampled_from(["", "id-1"]))}
    spec = draw(SPEC)
    if wrong_types and spec:
        key = draw(st.sampled_from(sorted(spec)))
        spec[key] = draw(WRONG_TYPE)
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": kind, "metadata": metadata, "spec": spec}


PATHS = {"PropagationPolicy": ("/validate-propagationpolicy", "/mutate-propagationpolicy"),
         "ClusterPropagationPolicy": ("/validate-clusterpropagationpolicy",
                                      "/mutate-clusterpropagationpolicy")}
KINDS = {"PropagationPolicy": rules.PROPAGATION_POLICY,
         "ClusterPropagationPolicy": rules.CLUSTER_PROPAGATION_POLICY}


def expected_denial(obj: dict[str, Any], operation: str, old: dict[str, Any] | None,
                    namespace: str | None = None) -> tuple[bool, str | None]:
    """(decodes, denial message) straight from the pure functions."""
    kind = KINDS[obj["kind"]]
    try:
        decoded = schema.decode(obj, kind.type)
        decoded_old = schema.decode(old, kind.type) if old is not None else None
    except schema.DecodeError:
        return False, None
    if namespace is None:
        namespace = obj["metadata"].get("namespace", "") if kind.namespaced else ""
    return True, rules.validate_policy(kind, operation=operation, obj=decoded, old=decoded_old,
                                       request_namespace=namespace)


# Moderate example counts: the machine is shared; deadline off because its timing is noisy.
PROPERTY = settings(max_examples=80, deadline=None)


@PROPERTY
@given(policies(wrong_types=False) | policies(wrong_types=True), st.sampled_from(["CREATE", "UPDATE"]),
       st.text(min_size=1, max_size=8))
def test_validating_answer_agrees_with_the_rules(obj: dict[str, Any], operation: str, uid: str) -> None:
    old = obj if operation == "UPDATE" else None
    validate_path, _ = PATHS[obj["kind"]]
    outcome = review.handle(validate_path, body(a_review(obj, operation=operation, old=old, uid=uid)),
                            "application/json")
    response = outcome.review["response"]
    assert outcome.review["kind"] == "AdmissionReview" and response["uid"] == uid
    decodes, denial = expected_denial(obj, operation, old)
    if not decodes:
        assert response["allowed"] is False and response["status"]["code"] == 400
        assert response["status"]["message"]
    elif denial is None:
        assert response["allowed"] is True and response["status"]["code"] == 200
    else:
        assert response["allowed"] is False and response["status"]["code"] == 403
        assert response["status"]["message"] == denial


@PROPERTY
@given(policies(wrong_types=False), st.sampled_from(["CREATE", "UPDATE"]))
def test_mutation_applies_and_is_idempotent(obj: dict[str, Any], operation: str) -> None:
    _, mutate_path = PATHS[obj["kind"]]
    response = review.handle(mutate_path, body(a_review(obj, operation=operation, uid="u")),
                             "application/json").review["response"]
    assert response["allowed"] is True and response["uid"] == "u"
    ops = json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
    patched = check.apply_patch(json.loads(json.dumps(obj)), ops)
    again = review.handle(mutate_path, body(a_review(patched, operation="UPDATE", uid="v")),
                          "application/json").review["response"]
    assert "patch" not in again, json.loads(base64.b64decode(again["patch"]))
    kind = KINDS[obj["kind"]]
    assert schema.decode(patched, kind.type)["metadata"].get("labels", {}).get(kind.permanent_id_label) or (
        operation == "UPDATE")


SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=5))
JSON = st.recursive(SCALARS,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                max_size=3),
                    max_leaves=10)


@PROPERTY
@given(st.one_of(st.binary(max_size=200), JSON.map(lambda v: json.dumps(v).encode()),
                 JSON.map(lambda v: json.dumps({"kind": "AdmissionReview", "request": {
                     "uid": "z", "operation": "CREATE", "object": v}}).encode())),
       st.sampled_from(sorted(review.ENDPOINTS)))
def test_no_body_crashes_or_slips_through(data: bytes, path: str) -> None:
    outcome = review.handle(path, data, "application/json")
    response = outcome.review["response"]
    assert outcome.review["kind"] == "AdmissionReview"
    assert isinstance(response["status"]["code"], int)
    assert response["status"]["code"] != 500, response["status"]
    if response["allowed"]:
        sent = json.loads(data)
        obj = sent["request"]["object"]
        endpoint = review.ENDPOINTS[path]
        if endpoint.kind in KINDS and not endpoint.mutating:
            decodes, denial = expected_denial({**obj, "kind": endpoint.kind,
                                               "metadata": obj.get("metadata") or {}},
                                              "CREATE", None, "")
            assert decodes and denial is None
    else:
        assert response["status"]["message"]


def _containers(value: Any, out: list[Any]) -> list[Any]:
    if isinstance(value, dict):
        out.append(value)
        for v in value.values():
            _containers(v, out)
    elif isinstance(value, list):
        for v in value:
            _containers(v, out)
    return out


@st.composite
def policies_with_one_bad_value(draw: st.DrawFn) -> dict[str, Any]:
    """A generated policy with one member, anywhere below the root, replaced by arbitrary JSON."""
    obj = copy.deepcopy(draw(policies()))  # st.just values are shared objects: never edit them in place
    targets = [*_containers(obj["spec"], []), obj["metadata"]]
    target = draw(st.sampled_from(targets))
    key = draw(st.sampled_from(sorted(target)) if target and draw(st.booleans()) else st.text(max_size=4))
    target[key] = draw(JSON)
    return obj


@PROPERTY
@given(policies_with_one_bad_value(), st.sampled_from(["CREATE", "UPDATE"]))
def test_nested_bad_values_never_crash_and_agree_with_the_rules(obj: dict[str, Any], operation: str) -> None:
    validate_path, mutate_path = PATHS[obj["kind"]]
    old = obj if operation == "UPDATE" else None
    response = review.handle(validate_path, body(a_review(obj, operation=operation, old=old, uid="n")),
                             "application/json").review["response"]
    assert response["uid"] == "n" and response["status"]["code"] in (200, 400, 403)
    decodes, denial = expected_denial(obj, operation, old)
    assert response["allowed"] is (decodes and denial is None)
    mutated = review.handle(mutate_path, body(a_review(obj, operation=operation, uid="m")),
                            "application/json").review["response"]
    assert mutated["allowed"] is decodes and mutated["status"]["code"] == (200 if decodes else 400)
    if decodes and "patch" in mutated:
        # Through JSON: the generated value may share sub-objects, which a sent document never does.
        check.apply_patch(json.loads(json.dumps(obj)), json.loads(base64.b64decode(mutated["patch"])))
