"""Node-accurate estimates in process, from member inventories given as objects (no gRPC).

:class:`InventoryEstimator` implements the scheduler core's ``ReplicaEstimator`` with the estimator
server's own code. ``fleetsched simulate`` uses it when its input holds Nodes (and Pods) of member
clusters. Convention: a Node belongs to the member cluster named by its ``fleetsched.io/member-cluster``
annotation (or label); a Pod goes with its own annotation, else with the cluster of the node it is
bound to. Clusters without Nodes in the input get -1 ("cannot judge"), so only the general estimator
counts for them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from fleetsched.estimator import handlers, wire
from fleetsched.estimator.inventory import MemberInventory
from fleetsched.estimator.model import EstimatorError
from fleetsched.estimator.pb import estimator_pb2
from fleetsched.estimator.service import EstimatorService
from fleetsched.scheduler.types import thaw

__all__ = [
    "MEMBER_CLUSTER_ANNOTATION",
    "UNAUTHENTIC_REPLICA",
    "InventoryEstimator",
    "cluster_name",
    "component_json",
    "inventories_from_objects",
    "member_cluster_of",
    "requirements_json",
]

UNAUTHENTIC_REPLICA = -1
MEMBER_CLUSTER_ANNOTATION = "fleetsched.io/member-cluster"


# ------------------------------------------------------------------------------------------- requests
def requirements_json(requirements: Any) -> dict[str, Any] | None:
    """The scheduler core's ReplicaRequirements (or a JSON-shaped mapping) in Karmada's JSON form."""
    if requirements is None:
        return None
    if isinstance(requirements, Mapping):
        return dict(requirements)
    out: dict[str, Any] = {
        "resourceRequest": {name: str(q) for name, q in requirements.resource_request},
        "namespace": requirements.namespace,
        "priorityClassName": requirements.priority_class_name,
    }
    claim = requirements.node_claim
    if claim is not None:
        claim_json: dict[str, Any] = {"nodeSelector": dict(claim.node_selector)}
        if claim.hard_node_affinity is not None:
            claim_json["hardNodeAffinity"] = thaw(claim.hard_node_affinity)
        claim_json["tolerations"] = [
            {"key": t.key, "operator": t.operator, "value": t.value, "effect": t.effect,
             **({"tolerationSeconds": t.toleration_seconds}
                if getattr(t, "toleration_seconds", None) is not None else {})}
            for t in claim.tolerations]
        out["nodeClaim"] = claim_json
    return out


def component_json(component: Any) -> dict[str, Any]:
    """A component (the core's value or already JSON-shaped) in Karmada's JSON form; one without
    requirements is sent without the field (spec 4.2)."""
    if isinstance(component, Mapping):
        return dict(component)
    out: dict[str, Any] = {"name": component.name, "replicas": component.replicas}
    requirements = requirements_json(component.replica_requirements)
    if requirements is not None:
        requirements.pop("namespace", None)  # ComponentReplicaRequirements has no namespace field
        out["replicaRequirements"] = requirements
    return out


def _requirements_namespace(component: Any) -> str:
    if isinstance(component, Mapping):
        return ""
    requirements = component.replica_requirements
    return str(getattr(requirements, "namespace", "") or "") if requirements is not None else ""


def cluster_name(cluster: Any) -> str:
    return cluster if isinstance(cluster, str) else str(cluster.name)


# ------------------------------------------------------------------------------------------- in process
class InventoryEstimator:
    """Node-accurate estimates from member inventories, in process; -1 for clusters without one."""

    name = "node-inventory"

    def __init__(self, inventories: Mapping[str, MemberInventory]) -> None:
        self.inventories = dict(inventories)

    def max_available_replicas(self, clusters: Sequence[Any], replica_requirements: Any) -> list[int]:
        requirements = requirements_json(replica_requirements)

        def request(name: str) -> Any:
            raw: dict[str, Any] = {"cluster": name}
            if requirements is not None:
                raw["replicaRequirements"] = requirements
            return estimator_pb2.MaxAvailableReplicasRequest.FromString(
                wire.replicas_request_to_pb(raw).SerializeToString())

        def answer(service: EstimatorService, message: Any) -> int:
            return int(handlers.max_available_replicas(service, message).maxReplicas)

        return self._each_cluster(clusters, request, answer)

    def max_available_component_sets(self, clusters: Sequence[Any], components: Sequence[Any]) -> list[int]:
        parts = [component_json(c) for c in components]
        namespace = next((ns for ns in (_requirements_namespace(c) for c in components) if ns), "")

        def request(name: str) -> Any:
            message = wire.component_sets_request_to_pb({"cluster": name, "components": parts,
                                                         "namespace": namespace})
            return estimator_pb2.MaxAvailableComponentSetsRequest.FromString(message.SerializeToString())

        def answer(service: EstimatorService, message: Any) -> int:
            return int(handlers.max_available_component_sets(service, message).maxSets)

        return self._each_cluster(clusters, request, answer)

    def _each_cluster(self, clusters: Sequence[Any], request: Callable[[str], Any],
                      answer: Callable[[EstimatorService, Any], int]) -> list[int]:
        """One answer per cluster, in order, asked over the wire form as a remote estimator would be;
        UNAUTHENTIC_REPLICA where the cluster has no inventory or its estimator refuses the request."""
        out = []
        for cluster in clusters:
            name = cluster_name(cluster)
            inventory = self.inventories.get(name)
            if inventory is None:
                out.append(UNAUTHENTIC_REPLICA)
                continue
            message = request(name)
            try:
                out.append(answer(inventory.service, message))
            except EstimatorError:
                out.append(UNAUTHENTIC_REPLICA)
        return out


def member_cluster_of(obj: Mapping[str, Any]) -> str:
    """The member cluster an object of the input names (annotation first, then label), or ""."""
    meta = obj.get("metadata") or {}
    annotations, labels = meta.get("annotations") or {}, meta.get("labels") or {}
    cluster = annotations.get(MEMBER_CLUSTER_ANNOTATION) or labels.get(MEMBER_CLUSTER_ANNOTATION)
    return str(cluster) if cluster else ""


def inventories_from_objects(nodes: Iterable[Mapping[str, Any]],
                             pods: Iterable[Mapping[str, Any]] = ()) -> dict[str, MemberInventory]:
    """Group Nodes by the ``fleetsched.io/member-cluster`` annotation (or label); a Pod goes with its own
    annotation, else with the cluster of the node it is bound to. Nodes without it are ignored."""
    by_cluster: dict[str, list[Mapping[str, Any]]] = {}
    node_cluster: dict[str, str] = {}
    for node in nodes:
        cluster = member_cluster_of(node)
        if not cluster:
            continue
        by_cluster.setdefault(cluster, []).append(node)
        node_cluster[str((node.get("metadata") or {}).get("name", ""))] = cluster
    for pod in pods:
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        cluster = member_cluster_of(pod) or node_cluster.get(node_name, "")
        if cluster in by_cluster:
            by_cluster[cluster].append(pod)
    return {cluster: MemberInventory(cluster, objects) for cluster, objects in by_cluster.items()}
