"""Typed models of the Karmada kinds fleetsched reads and writes, plus quantities, selectors and loading.

Models speak Karmada's camelCase JSON through aliases (``model_validate(dict)``, ``to_dict()``) and
snake_case in Python. Absent fields are ``None``: the models never invent values (CRD defaults are
in the JSON schema, see ``fleetsched.api.defaults``). Submodules:

* ``meta``: ObjectMeta, Condition, LabelSelector, Taint, Toleration, NodeSelector, ObjectReference
* ``policy``: PropagationPolicy, ClusterPropagationPolicy and the placement types
* ``work``: ResourceBinding, ClusterResourceBinding
* ``cluster``: Cluster
* ``apps``: WorkloadRebalancer (imported from its module, not exported here)
* ``selectors``: label selector / cluster affinity matching, resource selector priority
* ``load``: YAML to typed objects, ``LoadError``
* ``yamlload``: bytes (files, stdin, request bodies) to YAML/JSON documents, refusing hostile input
  (undecodable bytes, duplicate keys, huge integers, alias expansion past a ``Budget``) in one line
* ``quantity``: exact Kubernetes quantities

Exports are resolved lazily (PEP 562): ``import fleetsched.api.quantity`` (as the scheduling core
does) does not pull in pydantic or the models; ``from fleetsched.api import Cluster`` imports
``fleetsched.api.cluster`` on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fleetsched.api.cluster import (
        CLUSTER_API_VERSION,
        AllocatableModeling,
        APIEnablement,
        APIResource,
        Cluster,
        ClusterSpec,
        ClusterStatus,
        LocalSecretReference,
        NodeSummary,
        ResourceModel,
        ResourceModelRange,
        ResourceSummary,
    )
    from fleetsched.api.load import (
        LoadError,
        LoadResult,
        ResourceTemplate,
        Source,
        load_files,
        load_text,
        parse_object,
    )
    from fleetsched.api.meta import (
        Condition,
        LabelSelector,
        LabelSelectorRequirement,
        NodeSelector,
        NodeSelectorRequirement,
        NodeSelectorTerm,
        ObjectMeta,
        ObjectReference,
        OwnerReference,
        Taint,
        Toleration,
    )
    from fleetsched.api.policy import (
        POLICY_API_VERSION,
        ApplicationFailoverBehavior,
        ClusterAffinity,
        ClusterAffinityTerm,
        ClusterFailoverBehavior,
        ClusterPreferences,
        ClusterPropagationPolicy,
        DecisionConditions,
        DispatchingOnClusters,
        FailoverBehavior,
        FieldSelector,
        OverflowClusterAffinity,
        Placement,
        Policy,
        PropagationPolicy,
        PropagationSpec,
        ReplicaSchedulingStrategy,
        ResourceSelector,
        SchedulePriority,
        SpreadConstraint,
        StatePreservation,
        StatePreservationRule,
        StaticClusterWeight,
        Suspension,
        WorkloadAffinity,
        WorkloadAffinityTerm,
    )
    from fleetsched.api.quantity import (
        Quantity,
        QuantityError,
        parse_quantity,
    )
    from fleetsched.api.work import (
        WORK_API_VERSION,
        AggregatedStatusItem,
        Binding,
        BindingSchedulePriority,
        BindingSnapshot,
        BindingSuspension,
        ClusterResourceBinding,
        Component,
        ComponentReplicaRequirements,
        ComponentReplicas,
        GracefulEvictionTask,
        NodeClaim,
        ReplicaRequirements,
        ResourceBinding,
        ResourceBindingSpec,
        ResourceBindingStatus,
        TargetCluster,
        WorkloadAffinityGroups,
    )

# Exported name -> the submodule defining it.
_EXPORTS: dict[str, str] = {
    "APIEnablement": "fleetsched.api.cluster",
    "APIResource": "fleetsched.api.cluster",
    "AllocatableModeling": "fleetsched.api.cluster",
    "CLUSTER_API_VERSION": "fleetsched.api.cluster",
    "Cluster": "fleetsched.api.cluster",
    "ClusterSpec": "fleetsched.api.cluster",
    "ClusterStatus": "fleetsched.api.cluster",
    "LocalSecretReference": "fleetsched.api.cluster",
    "NodeSummary": "fleetsched.api.cluster",
    "ResourceModel": "fleetsched.api.cluster",
    "ResourceModelRange": "fleetsched.api.cluster",
    "ResourceSummary": "fleetsched.api.cluster",
    "LoadError": "fleetsched.api.load",
    "LoadResult": "fleetsched.api.load",
    "ResourceTemplate": "fleetsched.api.load",
    "Source": "fleetsched.api.load",
    "load_files": "fleetsched.api.load",
    "load_text": "fleetsched.api.load",
    "parse_object": "fleetsched.api.load",
    "Condition": "fleetsched.api.meta",
    "LabelSelector": "fleetsched.api.meta",
    "LabelSelectorRequirement": "fleetsched.api.meta",
    "NodeSelector": "fleetsched.api.meta",
    "NodeSelectorRequirement": "fleetsched.api.meta",
    "NodeSelectorTerm": "fleetsched.api.meta",
    "ObjectMeta": "fleetsched.api.meta",
    "ObjectReference": "fleetsched.api.meta",
    "OwnerReference": "fleetsched.api.meta",
    "Taint": "fleetsched.api.meta",
    "Toleration": "fleetsched.api.meta",
    "ApplicationFailoverBehavior": "fleetsched.api.policy",
    "ClusterAffinity": "fleetsched.api.policy",
    "ClusterAffinityTerm": "fleetsched.api.policy",
    "ClusterFailoverBehavior": "fleetsched.api.policy",
    "ClusterPreferences": "fleetsched.api.policy",
    "ClusterPropagationPolicy": "fleetsched.api.policy",
    "DecisionConditions": "fleetsched.api.policy",
    "DispatchingOnClusters": "fleetsched.api.policy",
    "FailoverBehavior": "fleetsched.api.policy",
    "FieldSelector": "fleetsched.api.policy",
    "OverflowClusterAffinity": "fleetsched.api.policy",
    "POLICY_API_VERSION": "fleetsched.api.policy",
    "Placement": "fleetsched.api.policy",
    "Policy": "fleetsched.api.policy",
    "PropagationPolicy": "fleetsched.api.policy",
    "PropagationSpec": "fleetsched.api.policy",
    "ReplicaSchedulingStrategy": "fleetsched.api.policy",
    "ResourceSelector": "fleetsched.api.policy",
    "SchedulePriority": "fleetsched.api.policy",
    "SpreadConstraint": "fleetsched.api.policy",
    "StatePreservation": "fleetsched.api.policy",
    "StatePreservationRule": "fleetsched.api.policy",
    "StaticClusterWeight": "fleetsched.api.policy",
    "Suspension": "fleetsched.api.policy",
    "WorkloadAffinity": "fleetsched.api.policy",
    "WorkloadAffinityTerm": "fleetsched.api.policy",
    "Quantity": "fleetsched.api.quantity",
    "QuantityError": "fleetsched.api.quantity",
    "parse_quantity": "fleetsched.api.quantity",
    "AggregatedStatusItem": "fleetsched.api.work",
    "Binding": "fleetsched.api.work",
    "BindingSchedulePriority": "fleetsched.api.work",
    "BindingSnapshot": "fleetsched.api.work",
    "BindingSuspension": "fleetsched.api.work",
    "ClusterResourceBinding": "fleetsched.api.work",
    "Component": "fleetsched.api.work",
    "ComponentReplicaRequirements": "fleetsched.api.work",
    "ComponentReplicas": "fleetsched.api.work",
    "GracefulEvictionTask": "fleetsched.api.work",
    "NodeClaim": "fleetsched.api.work",
    "ReplicaRequirements": "fleetsched.api.work",
    "ResourceBinding": "fleetsched.api.work",
    "ResourceBindingSpec": "fleetsched.api.work",
    "ResourceBindingStatus": "fleetsched.api.work",
    "TargetCluster": "fleetsched.api.work",
    "WORK_API_VERSION": "fleetsched.api.work",
    "WorkloadAffinityGroups": "fleetsched.api.work",
}

__all__ = [
    "CLUSTER_API_VERSION",
    "POLICY_API_VERSION",
    "WORK_API_VERSION",
    "APIEnablement",
    "APIResource",
    "AggregatedStatusItem",
    "AllocatableModeling",
    "ApplicationFailoverBehavior",
    "Binding",
    "BindingSchedulePriority",
    "BindingSnapshot",
    "BindingSuspension",
    "Cluster",
    "ClusterAffinity",
    "ClusterAffinityTerm",
    "ClusterFailoverBehavior",
    "ClusterPreferences",
    "ClusterPropagationPolicy",
    "ClusterResourceBinding",
    "ClusterSpec",
    "ClusterStatus",
    "Component",
    "ComponentReplicaRequirements",
    "ComponentReplicas",
    "Condition",
    "DecisionConditions",
    "DispatchingOnClusters",
    "FailoverBehavior",
    "FieldSelector",
    "GracefulEvictionTask",
    "LabelSelector",
    "LabelSelectorRequirement",
    "LoadError",
    "LoadResult",
    "LocalSecretReference",
    "NodeClaim",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeSummary",
    "ObjectMeta",
    "ObjectReference",
    "OverflowClusterAffinity",
    "OwnerReference",
    "Placement",
    "Policy",
    "PropagationPolicy",
    "PropagationSpec",
    "Quantity",
    "QuantityError",
    "ReplicaRequirements",
    "ReplicaSchedulingStrategy",
    "ResourceBinding",
    "ResourceBindingSpec",
    "ResourceBindingStatus",
    "ResourceModel",
    "ResourceModelRange",
    "ResourceSelector",
    "ResourceSummary",
    "ResourceTemplate",
    "SchedulePriority",
    "Source",
    "SpreadConstraint",
    "StatePreservation",
    "StatePreservationRule",
    "StaticClusterWeight",
    "Suspension",
    "Taint",
    "TargetCluster",
    "Toleration",
    "WorkloadAffinity",
    "WorkloadAffinityGroups",
    "WorkloadAffinityTerm",
    "load_files",
    "load_text",
    "parse_object",
    "parse_quantity",
]


# Submodules reachable as attributes of the package, as when this module imported them all.
_SUBMODULES = frozenset(
    {"cluster", "crds", "defaults", "load", "meta", "policy", "quantity", "selectors", "work"}
)


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
