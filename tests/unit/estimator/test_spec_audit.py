"""Table tests derived line by line from shared/spec/estimator.md sections 2-4 and 6-7, for statements the
other estimator tests do not pin. Every expectation is worked out from the spec text, not from the code.

Each table row names the section it checks. Requests go through the wire bytes and the same handlers as the
gRPC server and ``fleetsched estimate``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.api.quantity import parse_quantity
from fleetsched.estimator import estimate_cmd, handlers, wire
from fleetsched.estimator.model import EstimatorError
from fleetsched.estimator.pb import estimator_pb2, k8s_types_pb2
from fleetsched.estimator.plugins.resource_quota import QuotaSelector

from .builders import a_node, a_pod, a_quota, component, member, replicas, sets

CPU1 = {"resourceRequest": {"cpu": "1"}}
HI = {"scopeName": "PriorityClass", "operator": "In", "values": ["hi"]}
NOW = datetime(2030, 1, 1, tzinfo=UTC)
HEAD = "kind: EstimatorOptions\nclusterName: m\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n}\n"


def affinity(*terms: Mapping[str, Any]) -> dict[str, Any]:
    return {"resourceRequest": {"cpu": "1"},
            "nodeClaim": {"hardNodeAffinity": {"nodeSelectorTerms": list(terms)}}}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


# ------------------------------------------------------------------------------------------ 3.4 node filter
@pytest.fixture(scope="module")
def labelled():  # type: ignore[no-untyped-def]
    # each node fits 4 replicas of cpu: 1
    return member(
        a_node("a", "4", labels={"tier": "1", "zone": "x"}),
        a_node("b", "4", labels={"tier": "3", "ssd": "true", "num": "-7"}),
        a_node("c", "4", labels={"tier": "abc", "empty": ""}),
        a_node("d", "4"),
    )


@pytest.mark.parametrize(("terms", "want"), [
    pytest.param([{"matchExpressions": [expr("tier", "Gt", "2")]}], 4, id="Gt: label parses and is greater"),
    pytest.param([{"matchExpressions": [expr("tier", "Lt", "3")]}], 4,
                 id="Lt: strictly less, non-numeric label never"),
    pytest.param([{"matchExpressions": [expr("tier", "Gt", "0")]}], 8,
                 id="Gt ignores non-numeric and absent labels"),
    pytest.param([{"matchExpressions": [expr("num", "Lt", "0")]}], 4,
                 id="negative label value parses as int64"),
    pytest.param([{"matchExpressions": [expr("tier", "Gt", "-1")]}], 0,
                 id="Gt value '-1' is not a valid label value: invalid term"),
    pytest.param([{"matchExpressions": [expr("tier", "Lt", "99999999999999999999")]}], 0,
                 id="Lt value beyond int64: invalid term"),
    pytest.param([{"matchExpressions": [expr("tier", "Gt")]}], 0, id="Gt without a value: invalid"),
    pytest.param([{"matchExpressions": [expr("tier", "DoesNotExist", "1")]}], 0,
                 id="DoesNotExist with values: invalid"),
    pytest.param([{"matchExpressions": [expr("tier", "NotIn")]}], 0, id="NotIn without values: invalid"),
    pytest.param([{"matchExpressions": [expr("tier", "In", "bad value")]}], 0,
                 id="In with an invalid label value: invalid"),
    pytest.param([{"matchExpressions": [expr("tier", "NotIn", "1")]}], 12,
                 id="NotIn: absent label matches"),
    pytest.param([{"matchExpressions": [expr("empty", "In", "")]}], 4, id="In an empty value"),
    pytest.param([{"matchExpressions": [expr("tier", "in", "1")]}], 0, id="operators are case sensitive"),
    pytest.param([{"matchExpressions": [expr("", "Exists")]}], 0, id="empty key: invalid"),
    pytest.param([{"matchExpressions": [expr("example.com/tier", "DoesNotExist")]}], 16,
                 id="prefixed key is valid"),
    pytest.param([{"matchExpressions": [expr("tier", "Gt", "2")]},
                  {"matchExpressions": [expr("zone", "Exists")]}],
                 8, id="terms are ORed"),
    pytest.param([{"matchExpressions": [expr("tier", "Exists"), expr("ssd", "DoesNotExist")]}], 8,
                 id="expressions are ANDed"),
    pytest.param([{"matchFields": [expr("metadata.name", "In", "a")]}, {}], 4,
                 id="an empty term next to a real one is dropped"),
    pytest.param([{"matchFields": [expr("metadata.name", "NotIn", "a"),
                                   expr("metadata.name", "NotIn", "b")]}], 8, id="matchFields ANDed"),
    pytest.param([{"matchFields": [expr("metadata.name", "Gt", "1")]}], 0, id="matchFields Gt: invalid"),
    pytest.param([{"matchFields": [expr("metadata.name", "In")]}], 0,
                 id="matchFields In without a value: invalid"),
    pytest.param([{"matchFields": [expr("metadata.uid", "In", "")]}], 16,
                 id="unknown field reads as empty string"),
    pytest.param([{"matchFields": [expr("metadata.name", "In", "a")],
                   "matchExpressions": [expr("tier", "In", "3")]}], 0,
                 id="fields and expressions ANDed in a term"),
])
def test_required_node_affinity_operators(labelled, terms, want) -> None:  # type: ignore[no-untyped-def]
    """3.4 item 2."""
    assert replicas(labelled, affinity(*terms)) == want


@pytest.mark.parametrize(("tolerations", "want"), [
    pytest.param([], 4, id="no tolerations: only the untainted node"),
    pytest.param([{"key": "k", "operator": "Exists"}], 16, id="Exists on the key, any value and effect"),
    pytest.param([{"key": "k", "operator": "Equal", "value": "v"}], 12,
                 id="Equal, empty effect: both effects"),
    pytest.param([{"key": "k", "value": "v", "effect": "NoExecute"}], 8, id="empty operator means Equal"),
    pytest.param([{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}], 8,
                 id="effect must equal"),
    pytest.param([{"operator": "Exists", "effect": "NoExecute"}], 8,
                 id="empty key with Exists and an effect tolerates every taint of that effect"),
    pytest.param([{"key": "K", "operator": "Exists"}], 4, id="keys are case sensitive"),
    pytest.param([{"key": "k", "operator": "exists"}], 4, id="unknown operator never tolerates"),
    pytest.param([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
                 8,
                 id="cordoned node tolerated by its implicit taint"),
    pytest.param([{"key": "node.kubernetes.io/unschedulable", "operator": "Equal", "value": "x"}], 4,
                 id="the implicit taint has an empty value"),
    pytest.param([{"operator": "Exists", "effect": "NoSchedule"}], 12,
                 id="NoSchedule wildcard: cordoned + NoSchedule nodes"),
])
def test_taints_and_cordoned_nodes(tolerations, want) -> None:  # type: ignore[no-untyped-def]
    """3.4 items 3 and 4."""
    inventory = member(
        a_node("plain", "4"),
        a_node("ns", "4", taints=[("k", "v", "NoSchedule")]),
        a_node("ne", "4", taints=[("k", "v", "NoExecute")]),
        a_node("both", "4", taints=[("k", "v", "NoExecute"), ("k", "w", "NoSchedule")]),
        a_node("cordoned", "4", unschedulable=True),
        a_node("prefer", "0", taints=[("k", "v", "PreferNoSchedule")]),
    )
    requirements = {"resourceRequest": {"cpu": "1"}, "nodeClaim": {"tolerations": tolerations}}
    assert replicas(inventory, requirements) == want


def test_node_selector_needs_every_key_with_that_exact_value() -> None:
    """3.4 item 1: label values compare exactly, a missing key never equals the empty string."""
    inventory = member(a_node("a", "4", labels={"k": "v", "e": ""}), a_node("b", "4", labels={"k": "V"}))
    assert replicas(inventory, {**CPU1, "nodeClaim": {"nodeSelector": {"k": "v"}}}) == 4
    assert replicas(inventory, {**CPU1, "nodeClaim": {"nodeSelector": {"k": "v", "e": ""}}}) == 4
    assert replicas(inventory, {**CPU1, "nodeClaim": {"nodeSelector": {"e": ""}}}) == 4
    assert replicas(inventory, {**CPU1, "nodeClaim": {"nodeSelector": {"k": "v", "x": ""}}}) == 0


# ------------------------------------------------------------------------------- 3.3 / 3.5 node arithmetic
@pytest.mark.parametrize(("request_", "want"), [
    pytest.param({"cpu": "1"}, 3, id="free cpu 3500m over 1000m"),
    pytest.param({"memory": "1Gi"}, 6, id="memory in bytes"),
    pytest.param({"ephemeral-storage": "10Gi"}, 5, id="ephemeral-storage"),
    pytest.param({"hugepages-2Mi": "2Mi"}, 3, id="hugepages are scalar, reduced by pod requests"),
    pytest.param({"example.com/dongle": "1"}, 0, id="scalar the pod uses up: nothing left"),
    pytest.param({"example.com/dongle": "0"}, 7, id="a zero scalar request is skipped"),
    pytest.param({"example.com/absent": "0"}, 7, id="a zero request of a scalar the node lacks is skipped"),
    pytest.param({"example.com/absent": "1"}, 0, id="a scalar the node lacks gives 0"),
    pytest.param({"cpu": "-1"}, 7, id="negative request skipped"),
    pytest.param({"storage": "1", "requests.cpu": "100", "foo": "1"}, 7, id="ignored names: pod slots only"),
    pytest.param({"pods": "100"}, 7, id="pods in a request are ignored"),
    pytest.param({"cpu": "0.0000001"}, 7, id="a sliver of cpu counts as one millicore"),
    pytest.param({"memory": "0.4"}, 7, id="a fraction of a byte counts as one byte"),
])
def test_free_resources_and_max_divided(request_, want) -> None:  # type: ignore[no-untyped-def]
    """3.3 and 3.5: free = allocatable - requests of assigned non-terminal pods, clamped; pod slots."""
    inventory = member(
        a_node("n", "4", "8Gi", "10", extra={"ephemeral-storage": "60Gi", "hugepages-2Mi": "8Mi",
                                             "example.com/dongle": "1", "storage": "5"}),
        a_pod("p1", "n", cpu="500m", memory="2Gi", **{"hugepages-2Mi": "2Mi", "example.com/dongle": "1",
                                                      "ephemeral-storage": "10Gi"}),
        a_pod("p2", "n"), a_pod("p3", "n"),
        a_pod("done", "n", phase="Succeeded", cpu="4"), a_pod("failed", "n", phase="Failed", cpu="4"),
        a_pod("pending", None, cpu="4"), a_pod("elsewhere", "ghost", cpu="4"),
    )
    assert replicas(inventory, {"resourceRequest": request_}) == want


def test_resources_missing_from_allocatable() -> None:
    """3.3 / 3.5: a node without memory or ephemeral-storage in its allocatable has none free; without pods
    it has no slots at all."""
    bare = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"},
            "status": {"allocatable": {"cpu": "4", "pods": "10"}}}
    no_pods = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "no-pods"},
               "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}
    inventory = member(bare, no_pods)
    assert replicas(inventory, {"resourceRequest": {"cpu": "1"}}) == 4
    assert replicas(inventory, {"resourceRequest": {"memory": "1"}}) == 0
    assert replicas(inventory, {"resourceRequest": {"ephemeral-storage": "1"}}) == 0
    assert replicas(inventory, {"resourceRequest": {"memory": "0"}}) == 10
    assert sets(inventory, [{"name": "c", "replicas": 1}]) == 10


def test_overcommitted_node_is_clamped_at_zero_per_resource() -> None:
    """3.3: requests above allocatable leave 0, not a negative amount that would cancel another node."""
    inventory = member(a_node("over", "1", pods="110"), a_pod("big", "over", cpu="3"), a_node("ok", "2"))
    assert replicas(inventory, CPU1) == 2
    # more pods than slots: no slots left (and not negative)
    crowded = member(a_node("n", "8", pods="1"), a_pod("p1", "n"), a_pod("p2", "n"), a_node("m", "1"))
    assert replicas(crowded, {}) == 110


def test_pod_request_is_converted_once_per_pod() -> None:
    """3.3: containers summed exactly, init maximum, overhead, then rounded up once per pod."""
    pod = a_pod("p", "n")
    pod["spec"]["containers"] = [{"name": c, "resources": {"requests": {"cpu": "0.3m"}}} for c in "abc"]
    pod["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "0.5m"}}}]
    pod["spec"]["overhead"] = {"cpu": "0.2m"}
    # (0.9m, init 0.5m) -> 0.9m, + 0.2m = 1.1m -> 2 millicores; per container it would have been 3 + 1 = 4.
    inventory = member(a_node("n", "10m"), pod)
    assert replicas(inventory, {"resourceRequest": {"cpu": "1m"}}) == 8


# ----------------------------------------------------------------------------------------------- 3.2 preamble
@pytest.mark.parametrize("cluster", ["member2", "", "Member1", "member1 "])
def test_cluster_name_must_match_exactly_for_every_rpc(cluster: str) -> None:
    """3.2 step 1 and 3.11 step 1: the same error for all three RPCs, also for a cluster without nodes."""
    message = f"cluster name does not match, got: {cluster}, desire: member1"
    empty = member()
    assert replicas(empty, CPU1, cluster=cluster) == message
    request = estimator_pb2.MaxAvailableComponentSetsRequest(cluster=cluster)
    with pytest.raises(EstimatorError) as caught:
        handlers.max_available_component_sets(empty.service, request)
    assert (caught.value.code, caught.value.message) == ("Unknown", message)
    with pytest.raises(EstimatorError) as caught:
        handlers.get_unschedulable_replicas(empty.service,
                                            estimator_pb2.UnschedulableReplicasRequest(cluster=cluster))
    assert caught.value.message == message


def test_no_nodes_answers_zero_before_any_plugin_runs() -> None:
    """3.2 step 3: zero nodes -> 0, quotas not consulted and the request not even decoded (3.7 step 1 decodes
    inside the plugin)."""
    inventory = member(a_pod("orphan", "ghost", cpu="1"),
                       a_quota("q", "default", {"cpu": "10"}, {"cpu": "1"}),
                       quota=True)
    assert replicas(inventory, CPU1) == 0
    assert replicas(inventory, {"resourceRequest": {"cpu": "not-a-quantity"}}) == 0
    assert sets(inventory, [component("c", 1, cpu="1")]) == 0
    assert sets(inventory, [component("c", 1, cpu="1e")]) == 0
    assert sets(inventory, []) == 0


def test_unparsable_quantity_fails_the_rpc_through_the_plugin_framework() -> None:
    """2.3 / 3.7 step 1 / 3.10: an unparsable quantity is a plugin Error, answered as a gRPC error
    `failed to estimate replicas: ...` (UNKNOWN)."""
    inventory = member(a_node("n"))
    got = replicas(inventory, {"resourceRequest": {"cpu": "abc"}})
    assert isinstance(got, str)
    assert got.startswith("failed to estimate replicas: estimate replica plugins fails with [")
    assert "quantities must match the regular expression" in got
    got = sets(inventory, [component("c", 1, cpu="abc")])
    assert isinstance(got, str)
    assert got.startswith("failed to estimate component sets: estimate components plugins fails with [")


def test_assumed_workloads_ignored_unless_the_gate_is_on() -> None:
    """3.2 step 4: with the gate off they are not read at all, so even a corrupt one is no error; 3.8 step 1:
    empty components answer 2147483647 before anything else is read."""
    assumed = [{"namespace": "default", "components": [component("a", 3, cpu="1")]}]
    off = member(a_node("n", "4"))
    on = member(a_node("n", "4"), overcommit=True)
    assert replicas(off, CPU1, assumed=assumed) == 4
    assert replicas(on, CPU1, assumed=assumed) == 1
    corrupt = [{"namespace": "default", "components": [component("a", 3, cpu="1x")]}]
    assert replicas(off, CPU1, assumed=corrupt) == 4
    assert sets(off, [component("c", 1, cpu="1")], assumed=corrupt) == 4
    assert sets(on, [], assumed=corrupt) == 2147483647
    assert str(replicas(on, CPU1, assumed=corrupt)).startswith("failed to estimate replicas: ")


# --------------------------------------------------------------------------------- 3.6-3.8 sets and first fit
def test_component_set_edge_cases() -> None:
    """3.6 / 3.8: empty components -> 2147483647 (NoOperation); zero-replica components always succeed; a
    component without requirements still needs a pod slot and an untainted node."""
    inventory = member(a_node("a", "4", pods="3"),
                       a_node("t", "64", pods="110", taints=[("k", "", "NoSchedule")]))
    assert sets(inventory, []) == 2147483647
    assert sets(inventory, [component("z", 0, cpu="1")]) == 2147483647
    assert sets(inventory, [component("z", 0, cpu="1000"), component("w", 2, cpu="1")]) == 1
    assert sets(inventory, [{"name": "bare", "replicas": 1}]) == 3
    assert sets(inventory, [component("c", 1, cpu="5")]) == 0
    tolerant = {"name": "t", "replicas": 4, "replicaRequirements": {
        "resourceRequest": {"cpu": "1"}, "nodeClaim": {"tolerations": [{"operator": "Exists"}]}}}
    assert sets(inventory, [tolerant]) == (3 + 64) // 4


def test_assumed_entry_stops_at_its_first_component_that_does_not_fit() -> None:
    """3.7 step 3: what was placed stays consumed, later components of the entry are not placed."""
    inventory = member(a_node("a", "4"), a_node("b", "4"), overcommit=True)
    assumed = [{"namespace": "default", "components": [
        component("first", 3, cpu="3"),      # a: 1, b: 1 placed -> 1 cpu left on each; the third fails
        component("second", 1, cpu="1"),    # never placed (it would take a's last cpu)
    ]}, {"namespace": "other", "components": []}]
    assert replicas(inventory, CPU1, assumed=assumed) == 2
    assert sets(inventory, [component("w", 1, cpu="1")], assumed=assumed) == 2


# ----------------------------------------------------------------------------------------- 3.9 resource quota
@pytest.mark.parametrize(("scope", "priority", "want"), [
    pytest.param({"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}, "high", True, id="In"),
    pytest.param({"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}, "", False,
                 id="In, none"),
    pytest.param({"scopeName": "PriorityClass", "operator": "NotIn", "values": ["high"]}, "", True,
                 id="NotIn, empty set"),
    pytest.param({"scopeName": "PriorityClass", "operator": "NotIn", "values": ["high"]}, "low", True,
                 id="NotIn other"),
    pytest.param({"scopeName": "PriorityClass", "operator": "NotIn", "values": []}, "low", False,
                 id="NotIn without values is invalid"),
    pytest.param({"scopeName": "PriorityClass", "operator": "Exists"}, "", False, id="Exists, empty"),
    pytest.param({"scopeName": "PriorityClass", "operator": "DoesNotExist"}, "", True, id="DoesNotExist"),
    pytest.param({"scopeName": "PriorityClass", "operator": "DoesNotExist", "values": ["x"]}, "", False,
                 id="DoesNotExist with values is an invalid requirement"),
    pytest.param({"scopeName": "PriorityClass", "operator": "In", "values": ["not valid!"]}, "not valid!",
                 False,
                 id="In with an invalid label value is an invalid requirement"),
    pytest.param({"scopeName": "PriorityClass", "operator": "Gt", "values": ["1"]}, "2", False,
                 id="operators other than the four never match"),
    pytest.param({"scopeName": "NotBestEffort", "operator": "Exists"}, "high", False, id="NotBestEffort"),
    pytest.param({"scopeName": "Whatever", "operator": "Exists"}, "high", False, id="unknown scope"),
])
def test_quota_scope_selector(scope, priority, want) -> None:  # type: ignore[no-untyped-def]
    """3.9 quota helpers: selector evaluation on the one-label set {PriorityClass: P}."""
    selector = QuotaSelector(scope["scopeName"], scope["operator"], tuple(scope.get("values") or ()))
    assert selector.matches(priority) is want


def quota_member(*quotas: dict[str, Any], overcommit: bool = False):  # type: ignore[no-untyped-def]
    node = a_node("n", "100", "1000Gi", "1000", extra={"example.com/gpu": "100", "hugepages-2Mi": "1Gi"})
    return member(node, *quotas, quota=True, overcommit=overcommit)


def ns_request(cpu: str = "500m", namespace: str = "ns", priority: str = "", **extra: str) -> dict[str, Any]:
    return {"resourceRequest": {"cpu": cpu, **extra}, "namespace": namespace, "priorityClassName": priority}


@pytest.mark.parametrize(("hard", "used", "request_", "want"), [
    pytest.param({"requests.cpu": "10", "cpu": "100"}, {"requests.cpu": "7", "cpu": "0"}, {}, 6,
                 id="requests.cpu wins over cpu"),
    pytest.param({"limits.cpu": "1"}, {"limits.cpu": "0"}, {}, 200, id="limits ignored"),
    pytest.param({"cpu": "10"}, {"requests.cpu": "0"}, {}, 200, id="name must be in hard and used"),
    pytest.param({"pods": "1", "count/pods": "1"}, {"pods": "1", "count/pods": "1"}, {}, 200,
                 id="pod counts ignored"),
    pytest.param({"requests.example.com/gpu": "3"}, {"requests.example.com/gpu": "1"},
                 {"example.com/gpu": "1"}, 2, id="requests.<extended>"),
    pytest.param({"memory": "1Gi"}, {"memory": "0"}, {}, 200, id="quota on a resource not requested"),
    pytest.param({"requests.memory": "1Gi"}, {"requests.memory": "512Mi"}, {"memory": "100Mi"}, 5,
                 id="memory in bytes"),
    pytest.param({"cpu": "1"}, {"cpu": "1"}, {}, 0, id="nothing left: Unschedulable -> 0"),
    pytest.param({"cpu": "1"}, {"cpu": "1500m"}, {}, -1, id="over-used: truncation toward zero"),
    pytest.param({"cpu": "1"}, {"cpu": "1"}, {"cpu": "0"}, 1000, id="zero request does not divide"),
    pytest.param({"hugepages-2Mi": "1"}, {"hugepages-2Mi": "1"}, {"hugepages-2Mi": "2Mi"}, 200,
                 id="hugepages not a quota resource"),
])
def test_quota_free_and_division(hard, used, request_, want) -> None:  # type: ignore[no-untyped-def]
    """3.9 Free / Division; node side fits 200 replicas of 500m."""
    inventory = quota_member(a_quota("q", "ns", hard, used))
    request = ns_request()
    request["resourceRequest"].update(request_)
    assert replicas(inventory, request) == want


def test_quota_far_over_used_wraps_like_gos_int32_conversion() -> None:
    """3.9 Division: results above 2147483647 mean no constraint, others go through Go's int32()."""
    inventory = quota_member(a_quota("q", "ns", {"memory": "1"}, {"memory": str(2**32 + 5)}))
    # free = -(2^32 + 4) bytes; / 1 byte -> -(2^32 + 4) -> int32 wraps to -4
    assert replicas(inventory, {"resourceRequest": {"memory": "1"}, "namespace": "ns"}) == -4
    inventory = quota_member(a_quota("q", "ns", {"memory": "1"}, {"memory": str(2**31 + 2)}))
    # -(2^31 + 1) wraps to 2^31 - 1: Go then reports 2147483647 (the pod slots, 1000, are smaller)
    assert replicas(inventory, {"resourceRequest": {"memory": "1"}, "namespace": "ns"}) == 1000


def test_quota_namespaces_and_priority() -> None:
    """3.9 Estimate: only the request namespace's quotas; an empty namespace lists every namespace's."""
    inventory = quota_member(a_quota("q", "ns", {"cpu": "2"}, {"cpu": "0"}),
                             a_quota("p", "other", {"cpu": "1"}, {"cpu": "0"}, selector=[HI]))
    assert replicas(inventory, ns_request()) == 4
    assert replicas(inventory, ns_request(namespace="elsewhere")) == 200
    assert replicas(inventory, ns_request(namespace="")) == 4
    assert replicas(inventory, ns_request(namespace="", priority="hi")) == 2
    assert replicas(inventory, {}) == 1000  # no replicaRequirements: no quota constraint, pod slots


def test_quota_assumed_deduction() -> None:
    """3.9 assumed deduction: same namespace, matching priority, cpu/memory/extended; below zero -> 0;
    then the quota divides even when the request itself names no quota resource."""
    quota = a_quota("q", "ns", {"cpu": "4"}, {"cpu": "1"})
    inventory = quota_member(quota, overcommit=True)

    def workload(namespace: str, count: int, cpu: str, priority: str = "") -> dict[str, Any]:
        item = component("a", count, cpu=cpu)
        item["replicaRequirements"]["priorityClassName"] = priority
        return {"namespace": namespace, "components": [item]}

    assert replicas(inventory, ns_request(), assumed=[workload("ns", 2, "1")]) == 2
    assert replicas(inventory, ns_request(), assumed=[workload("other", 2, "1")]) == 6
    assert replicas(inventory, ns_request(), assumed=[workload("ns", 4, "1")]) == 0
    bare = [{"namespace": "ns", "components": [{"name": "b", "replicas": 9}]}]
    assert replicas(inventory, ns_request(), assumed=bare) == 6
    # the deduction goes below zero: the quota yields 0 even for a request of resources it does not track
    assert replicas(inventory, {"resourceRequest": {"memory": "1Gi"}, "namespace": "ns"},
                    assumed=[workload("ns", 4, "1")]) == 0
    scoped = quota_member(a_quota("q", "ns", {"cpu": "4"}, {"cpu": "1"}, selector=[HI]), overcommit=True)
    assert replicas(scoped, ns_request(priority="hi"), assumed=[workload("ns", 2, "1", "lo")]) == 6
    assert replicas(scoped, ns_request(priority="hi"), assumed=[workload("ns", 2, "1", "hi")]) == 2


def test_quota_over_used_with_unrelated_assumptions_keeps_the_negative_division() -> None:
    """3.9: only the subtraction results are checked against zero; an over-used quota that no assumption
    touches keeps Go's truncated negative answer (Example 7)."""
    quota = a_quota("q", "ns", {"cpu": "10", "memory": "10Gi"}, {"cpu": "11300m", "memory": "0"})
    inventory = quota_member(quota, overcommit=True)
    memory_only = [{"namespace": "ns", "components": [component("m", 1, memory="1Gi")]}]
    assert replicas(inventory, ns_request(), assumed=memory_only) == -2


def test_quota_component_sets() -> None:
    """3.9 EstimateComponents: empty namespace or no quotas -> no constraint; per-set demand of matched
    components; stop at 0."""
    inventory = quota_member(a_quota("q", "ns", {"cpu": "10"}, {"cpu": "1"}))
    parts = [component("jm", 1, cpu="1"), component("tm", 2, cpu="1")]
    assert sets(inventory, parts, namespace="ns") == 3
    assert sets(inventory, parts, namespace="") == 33
    assert sets(inventory, parts, namespace="free") == 33
    full = quota_member(a_quota("q", "ns", {"cpu": "1"}, {"cpu": "1"}))
    assert sets(full, parts, namespace="ns") == 0


# -------------------------------------------------------------------------------- 3.11 unschedulable replicas
def _deployment(name: str, namespace: str = "default") -> list[dict[str, Any]]:
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    rs_template = {"metadata": {"labels": {"app": name, "pod-template-hash": "h"}},
                   "spec": {"containers": [{"name": "c", "image": "i"}]}}
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": name, "namespace": namespace, "uid": f"d-{name}"},
              "spec": {"selector": {"matchLabels": {"app": name}}, "template": template}}
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": f"{name}-h", "namespace": namespace, "uid": f"rs-{name}",
                       "labels": {"app": name, "pod-template-hash": "h"},
                       "creationTimestamp": "2020-01-01T00:00:00Z",
                       "ownerReferences": [{"uid": f"d-{name}", "controller": True, "kind": "Deployment",
                                            "name": name, "apiVersion": "apps/v1"}]},
          "spec": {"selector": {"matchLabels": {"app": name}}, "template": rs_template}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"{name}-p", "namespace": namespace, "labels": {"app": name},
                        "ownerReferences": [{"uid": f"rs-{name}", "controller": True}]},
           "spec": {"containers": [{"name": "c"}]},
           "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                          "reason": "Unschedulable",
                                                          "lastTransitionTime": "2000-01-01T00:00:00Z"}]}}
    return [deploy, rs, pod]


def unschedulable(inventory, ref: Mapping[str, str] | None, threshold: int = 0) -> int | str:  # type: ignore[no-untyped-def]
    raw: dict[str, Any] = {"cluster": "member1", "unschedulableThreshold": threshold}
    if ref is not None:
        raw["resource"] = dict(ref)
    message = estimator_pb2.UnschedulableReplicasRequest.FromString(
        wire.unschedulable_request_to_pb(raw).SerializeToString())
    try:
        answer = handlers.get_unschedulable_replicas(inventory.service, message, NOW)
    except EstimatorError as exc:
        return exc.message
    return int(answer.unschedulableReplicas)


@pytest.mark.parametrize(("ref", "want"), [
    pytest.param(None, "resource is nil", id="absent resource"),
    pytest.param({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "prod", "name": "web"}, 1,
                 id="found"),
    pytest.param({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "", "name": "web"},
                 'deployments.apps "web" not found', id="empty namespace: the cache key has no namespace"),
    pytest.param({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"},
                 'deployments.apps "default/web" not found', id="other namespace"),
    pytest.param({"apiVersion": "apps/v1beta1", "kind": "Deployment", "namespace": "prod", "name": "web"},
                 'no matches for kind "Deployment" in version "apps/v1beta1"', id="unserved version"),
    pytest.param({"apiVersion": "v1", "kind": "Widget", "namespace": "prod", "name": "web"},
                 'no matches for kind "Widget" in version "v1"', id="unknown kind"),
    pytest.param({"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "prod", "name": "web-h"},
                 "kind(ReplicaSet) of workload(prod/web-h) is not supported", id="existing other kind"),
    pytest.param({"apiVersion": "v1", "kind": "Node", "namespace": "", "name": "n1"},
                 "kind(Node) of workload(/n1) is not supported", id="an existing cluster-scoped object"),
    pytest.param({"apiVersion": "v1", "kind": "Node", "namespace": "", "name": "n2"},
                 'nodes "n2" not found', id="a missing cluster-scoped object"),
    pytest.param({"apiVersion": "v1", "kind": "ResourceQuota", "namespace": "prod", "name": "q"},
                 "kind(ResourceQuota) of workload(prod/q) is not supported", id="an existing quota"),
    pytest.param({"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "prod", "name": "nope"},
                 'replicasets.apps "nope" not found', id="fetched before the kind check"),
])
def test_unschedulable_replicas_errors(ref, want) -> None:  # type: ignore[no-untyped-def]
    """3.11 steps 1-3."""
    inventory = member(*_deployment("web", "prod"), a_node("n1"),
                       a_quota("q", "prod", {"cpu": "1"}, {"cpu": "0"}))
    assert unschedulable(inventory, ref) == want


def test_unschedulable_threshold_is_strict_and_in_nanoseconds() -> None:
    """3.11 step 5: lastTransitionTime + threshold strictly before now; threshold in ns."""
    inventory = member(*_deployment("web"))
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"}
    until_now = int((NOW - datetime(2000, 1, 1, tzinfo=UTC)).total_seconds()) * 10**9
    assert unschedulable(inventory, ref, until_now - 1) == 1
    assert unschedulable(inventory, ref, until_now) == 0
    assert unschedulable(inventory, ref, -until_now) == 1
    # 3.11 step 2: an empty namespace makes the cache key the bare name, which finds no Deployment
    assert unschedulable(inventory, {**ref, "namespace": ""}) == 'deployments.apps "web" not found'


# --------------------------------------------------------------------------------- 2.3 / 2.5 wire and numbers
@pytest.mark.parametrize(("text", "milli", "value"), [
    ("1", 1000, 1), ("0.1m", 1, 1), ("1.5Ki", 1536000, 1536), ("1e3", 1000000, 1000), ("1E3", 1000000, 1000),
    ("5.", 5000, 5), (".5", 500, 1), ("+2", 2000, 2), ("-0.5", -500, -1), ("1n", 1, 1),
    ("2Mi", 2097152000, 2097152),
])
def test_quantity_views_round_up_away_from_zero(text: str, milli: int, value: int) -> None:
    """2.5: Value = ceil (away from zero), MilliValue = ceil(x * 1000)."""
    q = parse_quantity(text)
    assert (q.milli_value(), q.value()) == (milli, value)


@pytest.mark.parametrize(("text", "want"), [
    ("-", "0"), (".", "0"), ("m", "0"), ("+", "0"), ("00.50", "500m"), ("1.G", "1G"), ("1e-40", "1n"),
    ("16Ei", "9223372036854775807"), ("-16Ei", "-9223372036854775807"), ("8Ei", "9223372036854775807"),
    ("7Ei", "7Ei"),
    ("1e", "unable to parse quantity's suffix"), ("1K", "unable to parse quantity's suffix"),
    ("1mi", "unable to parse quantity's suffix"), ("1+", "unable to parse quantity's suffix"),
    ("", wire.GO_QUANTITY_ERROR), ("1Kb", wire.GO_QUANTITY_ERROR), ("1 ", wire.GO_QUANTITY_ERROR),
    ("abc", wire.GO_QUANTITY_ERROR), ("1.5.5", wire.GO_QUANTITY_ERROR),
])
def test_quantity_text_on_the_wire_reads_as_kubernetes_parses_it(text: str, want: str) -> None:
    """2.3: the text is parsed with the normal Quantity parser; an unparsable string is an error."""
    data = k8s_types_pb2.Quantity(string=text).SerializeToString()
    try:
        got = wire.decode_quantity(data)
    except EstimatorError as exc:
        assert exc.message == want
    else:
        assert got == parse_quantity(want)


def test_absurd_exponents_do_not_hang_the_estimator() -> None:
    """2.3 / 3.5: 1e999999999 is larger than any node has, 1e-999999999 rounds up to one nano unit."""
    inventory = member(a_node("n", "4"))
    assert replicas(inventory, {"resourceRequest": {"cpu": "1e999999999"}}) == 0
    assert replicas(inventory, {"resourceRequest": {"cpu": "1e-999999999"}}) == 110


def test_missing_quantity_text_decodes_as_zero() -> None:
    """2.3: a Quantity without field 1 is zero."""
    assert wire.decode_quantity(b"").is_zero()
    data = k8s_types_pb2.Quantity(string="500m").SerializeToString()
    assert wire.decode_quantity(data).milli_value() == 500


# -------------------------------------------------------------------------------------- offline command input
def test_estimate_reports_a_malformed_request_field(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Bad input: a clear error naming the document and field, exit 2, nothing printed on stdout."""
    path = tmp_path / "in.yaml"
    path.write_text(HEAD + "---\nkind: MaxAvailableComponentSetsRequest\ncluster: m\ncomponents:\n"
                    "- {name: c, replicas: many}\n")
    parser = __import__("argparse").ArgumentParser()
    estimate_cmd.add_arguments(parser)
    assert estimate_cmd.run(parser.parse_args([str(path)])) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "request 1" in captured.err and "replicas" in captured.err


def test_estimate_answers_errors_as_code_and_message(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Conformance README: one entry per request, errors as {code, message}."""
    path = tmp_path / "in.yaml"
    path.write_text(HEAD + "status: {allocatable: {cpu: '2', pods: '3'}}\n"
                    "---\nkind: MaxAvailableReplicasRequest\ncluster: x\n"
                    "---\nkind: MaxAvailableReplicasRequest\ncluster: m\n")
    parser = __import__("argparse").ArgumentParser()
    estimate_cmd.add_arguments(parser)
    assert estimate_cmd.run(parser.parse_args([str(path), "-o", "json"])) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"error": {"code": "Unknown", "message": "cluster name does not match, got: x, desire: m"}},
        {"maxReplicas": 3}]


# ------------------------------------------------------------------------------------------------ 2.9 metrics
def test_plugin_and_step_metrics_are_karmadas() -> None:
    """2.9: the plugin extension-point and plugin-execution histograms (names, labels, buckets) and the
    GetUnschedulableReplicas steps of the algorithm-latency histogram."""
    from prometheus_client import generate_latest

    from fleetsched.estimator.server import EstimatorMetrics

    metrics = EstimatorMetrics()
    inventory = member(a_node("n", "4"), *_deployment("web"))
    inventory.service.observer = metrics.observe_plugin
    inventory.service.step_observer = metrics.observe_unschedulable_step
    assert replicas(inventory, CPU1) == 4
    assert sets(inventory, [component("c", 1, cpu="1")]) == 4
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"}
    assert unschedulable(inventory, ref) == 1
    assert unschedulable(inventory, {**ref, "name": "nope"}) == 'deployments.apps "default/nope" not found'
    text = generate_latest(metrics.registry).decode()
    prefix = "karmada_scheduler_estimator_estimating_"
    for point in ("estimate_replicas", "estimate_components"):
        assert (f'{prefix}plugin_extension_point_duration_seconds_count'
                f'{{estimating_plugin_extension_point="{point}"}} 1.0') in text
        for plugin in ("NodeResourceEstimator", "ResourceQuotaEstimator"):
            assert (f'{prefix}plugin_execution_duration_seconds_count{{estimating_plugin="{plugin}",'
                    f'estimating_plugin_extension_point="{point}"}} 1.0') in text
    assert f'{prefix}plugin_extension_point_duration_seconds_bucket{{estimating_plugin_extension_point=' \
           f'"estimate_replicas",le="0.2048"}}' in text  # 0.0001 * 2^11, the 12th bucket
    execution = [line.split('le="')[1].split('"')[0] for line in text.splitlines()
                 if line.startswith(f"{prefix}plugin_execution_duration_seconds_bucket")
                 and 'estimating_plugin="NodeResourceEstimator",estimating_plugin_extension_point='
                     '"estimate_replicas"' in line]
    assert len(execution) == 21 and float(execution[0]) == 0.00001 and execution[-1] == "+Inf"
    assert float(execution[-2]) == pytest.approx(0.00001 * 1.5**19)
    for step, result, count in (("GetObjectFromCache", "success", 1), ("GetObjectFromCache", "error", 1),
                                ("GetWorkloadUnschedulablePods", "success", 1)):
        assert (f'{prefix}algorithm_duration_seconds_count{{result="{result}",step="{step}",'
                f'type="GetUnschedulableReplicas"}} {count}.0') in text


# ------------------------------------------------------------ 3.6-3.8: a literal first fit, side by side
Part = tuple[int, int, bool]  # (replicas, millicores per replica, tolerates the taint)


def _literal_first_fit(nodes: list[tuple[str, int, int, bool]], components: list[Part],
                       assumed: list[list[Part]]) -> tuple[int, list[int], list[int]]:
    """Spec 3.6 read literally. nodes: (name, free millicores, free slots, tainted) in name order.
    Returns the sets that fit after the assumed entries, and the free cpu and slots the assumed entries
    left (what the replica path of 3.7 divides)."""
    cpu = [n[1] for n in nodes]
    pods = [n[2] for n in nodes]

    def max_divided(i: int, demand: int) -> int:
        return pods[i] if demand <= 0 else min(pods[i], cpu[i] // demand)

    def place_set(parts: list[Part]) -> bool:
        for replicas_, demand, tolerant in parts:
            remaining = replicas_
            for i, node in enumerate(nodes):
                if remaining <= 0:
                    break
                if node[3] and not tolerant:
                    continue
                k = max_divided(i, demand)
                if k == 0:
                    continue
                take = min(k, remaining)
                cpu[i] = max(cpu[i] - take * demand, 0)
                pods[i] = max(pods[i] - take, 0)
                remaining -= take
            if remaining > 0:
                return False
        return True

    for entry in assumed:
        if entry:
            place_set(entry)
    cpu_after, pods_after = list(cpu), list(pods)
    if all(r <= 0 for r, _, _ in components):
        return 2147483647, cpu_after, pods_after
    count = 0
    while place_set(components):
        count += 1
    return count, cpu_after, pods_after


PART = st.tuples(st.integers(0, 3), st.sampled_from([0, 250, 1000, 1500]), st.booleans())


@settings(max_examples=60, deadline=None)
@given(node_specs=st.lists(st.tuples(st.sampled_from([0, 500, 1000, 2500, 4000]), st.integers(0, 6),
                                     st.booleans()), min_size=1, max_size=6),
       parts=st.lists(PART, min_size=1, max_size=3),
       assumed=st.lists(st.lists(PART, max_size=2), max_size=2))
def test_component_sets_and_assumptions_equal_a_literal_first_fit(node_specs, parts, assumed) -> None:  # type: ignore[no-untyped-def]
    """3.6-3.8 with the overcommit gate on: whole sets first-fit in node order after the assumed entries;
    3.7: the replica path divides what the assumed entries left."""
    nodes = [(f"n{i}", cpu, slots, tainted) for i, (cpu, slots, tainted) in enumerate(node_specs)]
    objects = [a_node(name, f"{cpu}m", pods=str(slots), taints=[("t", "", "NoSchedule")] if tainted else [])
               for name, cpu, slots, tainted in nodes]
    inventory = member(*objects, overcommit=True)

    def as_component(index: int, part: Part) -> dict[str, Any]:
        count, milli, tolerant = part
        requirements: dict[str, Any] = {"resourceRequest": {"cpu": f"{milli}m"}}
        if tolerant:
            requirements["nodeClaim"] = {"tolerations": [{"key": "t", "operator": "Exists"}]}
        return {"name": f"c{index}", "replicas": count, "replicaRequirements": requirements}

    workloads = [{"namespace": "default", "components": [as_component(i, p) for i, p in enumerate(entry)]}
                 for entry in assumed]
    want_sets, free_cpu, free_pods = _literal_first_fit(nodes, parts, assumed)
    assert sets(inventory, [as_component(i, p) for i, p in enumerate(parts)], assumed=workloads) == want_sets
    want = sum(min(cpu // 250, slots) for node, cpu, slots in zip(nodes, free_cpu, free_pods, strict=True)
               if not node[3])
    assert replicas(inventory, {"resourceRequest": {"cpu": "250m"}}, assumed=workloads) == want
