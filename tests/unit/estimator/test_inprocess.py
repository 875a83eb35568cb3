"""The in-process estimator behind ``fleetsched simulate``: inventories grouped by the
``fleetsched.io/member-cluster`` annotation, conversion of the core's requirements, and a property."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.api.quantity import parse_quantity
from fleetsched.estimator.inprocess import (
    InventoryEstimator,
    component_json,
    inventories_from_objects,
    requirements_json,
)
from fleetsched.scheduler import types

from .builders import a_node, a_pod


def annotated(obj: dict[str, Any], cluster: str) -> dict[str, Any]:
    obj["metadata"].setdefault("annotations", {})["fleetsched.io/member-cluster"] = cluster
    return obj


def test_inventories_group_nodes_and_pods_by_cluster() -> None:
    nodes = [annotated(a_node("a1", "4"), "a"), annotated(a_node("b1", "4"), "b"), a_node("stray", "64")]
    pods = [a_pod("on-a1", "a1", cpu="3"), annotated(a_pod("pending", None, cpu="1"), "b")]
    estimator = InventoryEstimator(inventories_from_objects(nodes, pods))
    assert set(estimator.inventories) == {"a", "b"}
    cpu1 = types.ReplicaRequirements(resource_request=(("cpu", parse_quantity("1")),))
    assert estimator.max_available_replicas(["a", "b", "unknown"], cpu1) == [1, 4, -1]


def test_component_sets_in_process_follow_first_fit() -> None:
    """Spec 3.6/3.8 through the core's ComponentSetEstimator face; -1 for clusters without an inventory."""
    estimator = InventoryEstimator(inventories_from_objects(
        [annotated(a_node("a", "3"), "m"), annotated(a_node("b", "5"), "m")]))
    two_cpu = types.ReplicaRequirements(resource_request=(("cpu", parse_quantity("2")),), namespace="default")
    worker = types.Component("worker", 2, two_cpu)
    # spec example 5: A takes 1, B takes 1; then A 0, B 1 and the second replica has nowhere to go
    assert estimator.max_available_component_sets(["m", "other"], [worker]) == [1, -1]
    assert component_json(types.Component("bare", 3)) == {"name": "bare", "replicas": 3}
    assert component_json(worker) == {"name": "worker", "replicas": 2, "replicaRequirements": {
        "resourceRequest": {"cpu": "2"}, "priorityClassName": ""}}


def test_scheduler_requirements_convert_to_the_wire_form() -> None:
    requirements = types.ReplicaRequirements(
        resource_request=(("cpu", parse_quantity("0.5")),), namespace="ns", priority_class_name="high",
        node_claim=types.NodeClaim(node_selector=(("disk", "ssd"),),
                                   tolerations=(types.Toleration("k", "Equal", "v", "NoSchedule"),),
                                   hard_node_affinity={"nodeSelectorTerms": [{"matchExpressions": [
                                       {"key": "zone", "operator": "In", "values": ["a"]}]}]}))
    assert requirements_json(requirements) == {
        "resourceRequest": {"cpu": "500m"}, "namespace": "ns", "priorityClassName": "high",
        "nodeClaim": {"nodeSelector": {"disk": "ssd"},
                      "hardNodeAffinity": {"nodeSelectorTerms": [{"matchExpressions": [
                          {"key": "zone", "operator": "In", "values": ["a"]}]}]},
                      "tolerations": [{"key": "k", "operator": "Equal", "value": "v",
                                       "effect": "NoSchedule"}]}}
    assert requirements_json(None) is None


@settings(max_examples=40, deadline=None)
@given(cpus=st.lists(st.sampled_from(["1", "2", "4", "8"]), min_size=1, max_size=6),
       request=st.sampled_from(["500m", "1", "3"]))
def test_per_node_sum_never_exceeds_the_aggregate(cpus: list[str], request: str) -> None:
    estimator = InventoryEstimator(inventories_from_objects(
        [annotated(a_node(f"n{i}", cpu), "m") for i, cpu in enumerate(cpus)]))
    answer = estimator.max_available_replicas(
        ["m"], types.ReplicaRequirements(resource_request=(("cpu", parse_quantity(request)),)))[0]
    total_milli = sum(parse_quantity(c).milli_value() for c in cpus)
    assert 0 <= answer <= total_milli // parse_quantity(request).milli_value()
