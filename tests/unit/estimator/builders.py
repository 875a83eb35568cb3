"""Small builders for member-cluster objects and requests in the JSON form the estimator reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fleetsched.estimator import handlers, wire
from fleetsched.estimator.inventory import MemberInventory
from fleetsched.estimator.model import EstimatorError
from fleetsched.estimator.pb import estimator_pb2
from fleetsched.estimator.service import FeatureGates


def a_node(name: str, cpu: str = "8", memory: str = "32Gi", pods: str = "110", *,
           labels: Mapping[str, str] | None = None, taints: Sequence[tuple[str, str, str]] = (),
           unschedulable: bool = False, extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [{"key": k, "value": v, "effect": e} for k, v, e in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}}}


def a_pod(name: str, node: str | None, *, phase: str = "Running", namespace: str = "default",
          **requests: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "resources": {"requests": dict(requests)}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": spec, "status": {"phase": phase}}


def a_quota(name: str, namespace: str, hard: Mapping[str, str], used: Mapping[str, str], *,
            scopes: Sequence[str] = (), selector: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"hard": dict(hard)}
    if scopes:
        spec["scopes"] = list(scopes)
    if selector:
        spec["scopeSelector"] = {"matchExpressions": list(selector)}
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": namespace},
            "spec": spec, "status": {"hard": dict(hard), "used": dict(used)}}


def member(*objects: Mapping[str, Any], quota: bool = False, overcommit: bool = False,
           name: str = "member1") -> MemberInventory:
    return MemberInventory(name, objects, FeatureGates(resource_quota_estimate=quota,
                                                       scheduling_overcommit_protection=overcommit))


def replicas(inventory: MemberInventory, requirements: Mapping[str, Any] | None = None, *,
             assumed: Sequence[Mapping[str, Any]] = (), cluster: str | None = None) -> int | str:
    raw: dict[str, Any] = {"cluster": cluster if cluster is not None else inventory.service.cluster_name}
    if requirements is not None:
        raw["replicaRequirements"] = requirements
    if assumed:
        raw["assumedWorkloads"] = list(assumed)
    data = wire.replicas_request_to_pb(raw).SerializeToString()
    message = estimator_pb2.MaxAvailableReplicasRequest.FromString(data)
    try:
        return int(handlers.max_available_replicas(inventory.service, message).maxReplicas)
    except EstimatorError as exc:
        return exc.message


def sets(inventory: MemberInventory, components: Sequence[Mapping[str, Any]], *, namespace: str = "default",
         assumed: Sequence[Mapping[str, Any]] = ()) -> int | str:
    raw = {"cluster": inventory.service.cluster_name, "components": list(components), "namespace": namespace,
           "assumedWorkloads": list(assumed)}
    message = estimator_pb2.MaxAvailableComponentSetsRequest.FromString(
        wire.component_sets_request_to_pb(raw).SerializeToString())
    try:
        return int(handlers.max_available_component_sets(inventory.service, message).maxSets)
    except EstimatorError as exc:
        return exc.message


def component(name: str, count: int, **requests: str) -> dict[str, Any]:
    return {"name": name, "replicas": count, "replicaRequirements": {"resourceRequest": dict(requests)}}
