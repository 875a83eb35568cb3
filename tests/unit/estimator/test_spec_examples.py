"""The worked examples of shared/spec/estimator.md section 6 (3-7), answered by the server logic."""

from __future__ import annotations

import pytest

from .builders import a_node, a_pod, a_quota, component, member, replicas, sets

REQUEST = {"resourceRequest": {"cpu": "500m", "memory": "1Gi"}}


@pytest.fixture
def example3():  # type: ignore[no-untyped-def]
    return member(
        a_node("n1", "4", "8Gi", "10"),
        a_pod("p1", "n1", cpu="500m", memory="1Gi"), a_pod("p2", "n1", cpu="500m", memory="1Gi"),
        a_pod("p3", "n1", cpu="500m", memory="1Gi"),
        a_node("n2", "8", "16Gi", taints=[("dedicated", "gpu", "NoSchedule")]),
        a_node("n3", "8", "16Gi", unschedulable=True),
        a_node("n4", "2", "4Gi", taints=[("maint", "", "PreferNoSchedule")]),
        a_pod("p4", "n4"),
    )


@pytest.mark.parametrize(("claim", "request_", "want"), [
    pytest.param(None, REQUEST, 9, id="no tolerations: tainted and cordoned nodes excluded"),
    pytest.param({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                                   "effect": "NoSchedule"}]}, REQUEST, 25, id="tolerated NoSchedule taint"),
    pytest.param({"tolerations": [{"operator": "Exists"}]}, REQUEST, 41, id="Exists tolerates everything"),
    pytest.param(None, {}, 116, id="no request counts pod slots"),
    pytest.param(None, {"resourceRequest": {"cpu": "500m", "nvidia.com/gpu": "1"}}, 0, id="missing scalar"),
    pytest.param({"tolerations": [{"key": "dedicated", "operator": "Gt", "value": "1"}]}, REQUEST, 9,
                 id="comparison operators never tolerate"),
])
def test_example3_taints_unschedulable_and_pod_slots(example3, claim, request_, want) -> None:  # type: ignore[no-untyped-def]
    requirements = dict(request_)
    if claim is not None:
        requirements["nodeClaim"] = claim
    assert replicas(example3, requirements) == want


@pytest.mark.parametrize(("terms", "want"), [
    pytest.param([{"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["2"]}]}], 4, id="Gt"),
    pytest.param([{"matchExpressions": [{"key": "tier", "operator": "In", "values": ["1"]}]},
                  {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}], 8, id="terms ORed"),
    pytest.param([{"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["1"]}]}], 8,
                 id="NotIn matches unlabelled nodes"),
    pytest.param([{"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["abc"]}]}], 0,
                 id="invalid Gt value matches nothing"),
    pytest.param([{}], 0, id="one empty term matches nothing"),
])
def test_example4_required_node_affinity(terms, want) -> None:  # type: ignore[no-untyped-def]
    inventory = member(a_node("a", "4", labels={"tier": "1"}),
                       a_node("b", "4", labels={"tier": "3", "ssd": "true"}), a_node("c", "4"))
    assert replicas(inventory, {"resourceRequest": {"cpu": "1"},
                                "nodeClaim": {"hardNodeAffinity": {"nodeSelectorTerms": terms}}}) == want


def test_example5_component_sets_first_fit() -> None:
    assert sets(member(a_node("a", "3"), a_node("b", "5")), [component("worker", 2, cpu="2")]) == 1
    two_nodes = member(a_node("a", "4", "8Gi"), a_node("b", "4", "8Gi"))
    assert sets(two_nodes, [component("jm", 1, cpu="1", memory="2Gi"),
                            component("tm", 2, cpu="1", memory="2Gi")]) == 2


ASSUMED_3 = [{"namespace": "default", "components": [component("x", 3, cpu="1")]}]


@pytest.mark.parametrize(("overcommit", "want_replicas", "want_sets"), [
    pytest.param(True, 5, 2, id="assumed workload deducted by first fit"),
    pytest.param(False, 8, 4, id="gate off: assumptions ignored"),
])
def test_example6_overcommit_protection(overcommit: bool, want_replicas: int, want_sets: int) -> None:
    inventory = member(a_node("a", "4"), a_node("b", "4"), overcommit=overcommit)
    assert replicas(inventory, {"resourceRequest": {"cpu": "1"}}, assumed=ASSUMED_3) == want_replicas
    assert sets(inventory, [component("c", 2, cpu="1")], assumed=ASSUMED_3) == want_sets


def _quota_cluster(used: str = "7", **kwargs):  # type: ignore[no-untyped-def]
    nodes = [a_node(f"n{i}", "5") for i in range(2)]  # 20 replicas of 500m
    return member(*nodes, a_quota("q1", "ns", {"requests.cpu": "10"}, {"requests.cpu": used}, **kwargs),
                  quota=True, overcommit=True)


QUOTA_REQUEST = {"resourceRequest": {"cpu": "500m"}, "namespace": "ns", "priorityClassName": "low"}


def test_example7_resource_quota() -> None:
    assert replicas(_quota_cluster(), QUOTA_REQUEST) == 6
    four = [{"namespace": "ns", "components": [component("x", 4, cpu="500m")]}]
    assert replicas(_quota_cluster(), QUOTA_REQUEST, assumed=four) == 2
    eight = [{"namespace": "ns", "components": [component("x", 8, cpu="500m")]}]
    assert replicas(_quota_cluster(), QUOTA_REQUEST, assumed=eight) == 0
    scoped = _quota_cluster(selector=[{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}])
    assert replicas(scoped, QUOTA_REQUEST) == 20
    assert replicas(_quota_cluster(used="11300m"), QUOTA_REQUEST) == -2  # truncation toward zero, as Go


def test_quota_plugin_is_off_by_default() -> None:
    inventory = member(a_node("n1", "10"), a_quota("q1", "ns", {"requests.cpu": "1"}, {"requests.cpu": "0"}))
    assert replicas(inventory, QUOTA_REQUEST) == 20


def test_assumed_single_component_workload_consumes_what_it_places() -> None:
    inventory = member(a_node("a", "4"), a_node("b", "4"), overcommit=True)
    assumed = [{"namespace": "default", "components": [component("x", 6, cpu="1")]}]
    assert replicas(inventory, {"resourceRequest": {"cpu": "1"}}, assumed=assumed) == 2
    assert sets(inventory, [component("c", 1, cpu="1")], assumed=assumed) == 2
