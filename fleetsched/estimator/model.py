"""Plain values of the estimator requests after decoding (the decoded ``MaxAvailableReplicasRequest``
and component-set requests).

The wire carries Kubernetes payloads as bytes; :mod:`fleetsched.estimator.wire` decodes them into these
frozen values once per request, so the algorithm never touches protobuf.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetsched.api.quantity import Quantity

__all__ = [
    "EMPTY_CLAIM",
    "MAX_INT32",
    "AssumedWorkload",
    "Component",
    "EstimatorError",
    "MaxAvailableComponentSetsRequest",
    "MaxAvailableReplicasRequest",
    "NodeClaim",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectReference",
    "ReplicaRequirements",
    "Toleration",
    "UnschedulableReplicasRequest",
]

MAX_INT32 = 2147483647


class EstimatorError(Exception):
    """A request the estimator answers with a gRPC error: ``code`` is the status code name (``Unknown``)."""

    def __init__(self, message: str, *, code: str = "Unknown") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True, slots=True)
class NodeSelectorRequirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class NodeClaim:
    """Where a replica may run. ``node_affinity`` None means no required affinity at all; an empty tuple
    is a selector whose terms were all empty, which matches no node (spec 2.3)."""

    node_selector: tuple[tuple[str, str], ...] = ()
    node_affinity: tuple[NodeSelectorTerm, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()


EMPTY_CLAIM = NodeClaim()


@dataclass(frozen=True, slots=True)
class ReplicaRequirements:
    node_claim: NodeClaim | None = None
    resource_request: tuple[tuple[str, Quantity], ...] = ()
    namespace: str = ""
    priority_class_name: str = ""

    @property
    def claim(self) -> NodeClaim:
        return self.node_claim or EMPTY_CLAIM


@dataclass(frozen=True, slots=True)
class Component:
    name: str
    replicas: int
    requirements: ReplicaRequirements | None = None


@dataclass(frozen=True, slots=True)
class AssumedWorkload:
    namespace: str
    components: tuple[Component, ...] = ()


@dataclass(frozen=True, slots=True)
class MaxAvailableReplicasRequest:
    cluster: str
    replica_requirements: ReplicaRequirements | None = None
    assumed_workloads: tuple[AssumedWorkload, ...] = ()


@dataclass(frozen=True, slots=True)
class MaxAvailableComponentSetsRequest:
    cluster: str
    components: tuple[Component, ...] = ()
    namespace: str = ""
    assumed_workloads: tuple[AssumedWorkload, ...] = ()


@dataclass(frozen=True, slots=True)
class ObjectReference:
    api_version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class UnschedulableReplicasRequest:
    cluster: str
    resource: ObjectReference | None = None
    unschedulable_threshold_ns: int = 0
