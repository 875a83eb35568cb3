"""Building the desired binding for a template and the policy that claims it. Pure.

The result is what Karmada's detector would create: name, owner reference, finalizer, claim
labels/annotations, and the spec copied from the policy plus the replica interpretation (§7.7).
Never sets ``spec.clusters``, graceful eviction tasks, ``requiredBy`` or status: those belong to others.
"""

from __future__ import annotations

import json
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from fleetsched.api.load import ResourceTemplate
from fleetsched.api.policy import ClusterPropagationPolicy, Placement, PropagationPolicy, Suspension
from fleetsched.api.work import (
    WORK_API_VERSION,
    BindingSchedulePriority,
    BindingSuspension,
    ClusterResourceBinding,
    ResourceBinding,
    WorkloadAffinityGroups,
)
from fleetsched.detector import constants
from fleetsched.detector.interpret import interpret_replicas
from fleetsched.scheduler.stepping import BUDGET_ANNOTATIONS

__all__ = [
    "BuildError",
    "FeatureGates",
    "PolicyParts",
    "binding_kind",
    "binding_name",
    "build_binding",
    "build_binding_fields",
    "claim_metadata",
]

Policy = PropagationPolicy | ClusterPropagationPolicy
Binding = ResourceBinding | ClusterResourceBinding


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The Karmada feature gates that change what the detector builds, with Karmada's defaults."""

    priority_based_scheduling: bool = True
    workload_affinity: bool = False
    resource_quota_estimate: bool = False
    policy_preemption: bool = False


class BuildError(ValueError):
    """The binding cannot be built now (Karmada retries later); the message says why."""


def binding_name(name: str, kind: str) -> str:
    """``lowercase(<name with ':' → '.'> + '-' + <kind>)``, no hashing or truncation (Karmada's
    ``names.GenerateBindingName``)."""
    return f"{name.replace(':', '.')}-{kind}".lower()


def binding_kind(policy: Policy, template: ResourceTemplate) -> type[Binding]:
    if isinstance(policy, PropagationPolicy) or template.namespaced:
        return ResourceBinding
    return ClusterResourceBinding


def permanent_id(policy: Policy) -> str:
    label = (
        constants.PP_PERMANENT_ID_LABEL
        if isinstance(policy, PropagationPolicy)
        else constants.CPP_PERMANENT_ID_LABEL
    )
    return (policy.metadata.labels or {}).get(label, "")


def claim_metadata(policy: Policy) -> tuple[dict[str, str], dict[str, str]]:
    """The claim labels and annotations of a policy, as put on templates and bindings."""
    if isinstance(policy, PropagationPolicy):
        return (
            {constants.PP_PERMANENT_ID_LABEL: permanent_id(policy)},
            {
                constants.PP_NAMESPACE_ANNOTATION: policy.metadata.namespace or "",
                constants.PP_NAME_ANNOTATION: policy.metadata.name or "",
            },
        )
    return (
        {constants.CPP_PERMANENT_ID_LABEL: permanent_id(policy)},
        {constants.CPP_NAME_ANNOTATION: policy.metadata.name or ""},
    )


def _suspension(suspension: Suspension | None) -> BindingSuspension | None:
    if suspension is None:
        return None
    return BindingSuspension(
        dispatching=suspension.dispatching,
        dispatching_on_clusters=suspension.dispatching_on_clusters.model_copy(deep=True)
        if suspension.dispatching_on_clusters is not None
        else None,
    )


def _schedule_priority(
    policy: Policy, priority_class_value: Callable[[str], int | None] | None
) -> BindingSchedulePriority | None:
    source = policy.spec.schedule_priority
    if source is None:
        return None
    if source.priority_class_source != "KubePriorityClass":
        raise BuildError(f"priorityClassSource {source.priority_class_source} is not supported yet")
    value = priority_class_value(source.priority_class_name) if priority_class_value is not None else None
    if value is None:
        raise BuildError(f'failed to get PriorityClass "{source.priority_class_name}": not found')
    return BindingSchedulePriority(priority=value)


def _workload_affinity_groups(policy: Policy, template: ResourceTemplate) -> WorkloadAffinityGroups | None:
    placement = policy.spec.placement
    workload = placement.workload_affinity if placement is not None else None
    if workload is None:
        return None
    groups = WorkloadAffinityGroups()
    for term, attribute in (
        (workload.affinity, "affinity_group"),
        (workload.anti_affinity, "anti_affinity_group"),
    ):
        if term is not None and term.group_by_label_key in template.labels:
            setattr(
                groups, attribute, f"{term.group_by_label_key}={template.labels[term.group_by_label_key]}"
            )
    if groups.affinity_group is None and groups.anti_affinity_group is None:
        return None
    return groups


@dataclass(frozen=True, slots=True)
class PolicyParts:
    """What one policy puts into every binding it builds, in the binding's JSON form, computed
    once per policy: claim labels and annotations, and the spec fields copied from the policy
    (placement, failover and suspension as JSON text, decoded afresh for each binding so that no
    two bindings share a nested value)."""

    labels: dict[str, str]
    annotations: dict[str, str]
    propagate_deps: bool
    placement: str
    scheduler_name: str | None
    failover: str | None
    conflict_resolution: str | None
    preserve_resources_on_deletion: bool | None
    suspension: str | None

    @classmethod
    def of(cls, policy: Policy) -> PolicyParts:
        labels, annotations = claim_metadata(policy)
        own = policy.metadata.annotations or {}
        # a move budget given on the policy goes to its bindings (the scheduler reads it there)
        annotations.update({k: own[k] for k in BUDGET_ANNOTATIONS if k in own})
        spec = policy.spec
        # Karmada's policy spec holds placement by value, so a binding always has one (maybe {}).
        placement = spec.placement if spec.placement is not None else Placement()
        suspension = _suspension(spec.suspension)
        return cls(
            labels=labels,
            annotations=annotations,
            propagate_deps=bool(spec.propagate_deps),
            placement=_json(placement.to_dict()),
            scheduler_name=spec.scheduler_name,
            failover=_json(spec.failover.to_dict()) if spec.failover is not None else None,
            conflict_resolution=spec.conflict_resolution,
            preserve_resources_on_deletion=spec.preserve_resources_on_deletion,
            suspension=_json(suspension.to_dict()) if suspension is not None else None,
        )


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def build_binding_fields(
    template: ResourceTemplate,
    policy: Policy,
    *,
    gates: FeatureGates | None = None,
    priority_class_value: Callable[[str], int | None] | None = None,
    parts: MutableMapping[int, PolicyParts] | None = None,
) -> dict[str, Any]:
    """The desired binding for ``template`` claimed by ``policy`` in its JSON form: what
    ``build_binding`` returns, as ``to_dict()`` writes it (Go's omitempty: fields that are not
    set are absent), in the models' field order. Plain values only, none shared with another call.

    ``parts`` memoises ``PolicyParts`` by ``id(policy)`` across calls: the caller keeps the
    policies alive as long as the mapping (``PolicySet.built_parts`` does).
    Raises ``BuildError`` (or ``InterpretError`` for a malformed template).
    """
    gates = gates or FeatureGates()
    namespaced_binding = isinstance(policy, PropagationPolicy) or template.namespaced
    replicas, requirements = interpret_replicas(
        template.api_version,
        template.kind,
        template.raw,
        resource_quota_estimate=gates.resource_quota_estimate,
    )
    shared = parts.get(id(policy)) if parts is not None else None
    if shared is None:
        shared = PolicyParts.of(policy)
        if parts is not None:
            parts[id(policy)] = shared
    api_version, kind, name = template.api_version, template.kind, template.name
    metadata: dict[str, Any] = {"name": binding_name(name, kind)}
    if namespaced_binding and template.namespace is not None:
        metadata["namespace"] = template.namespace
    metadata["labels"] = dict(shared.labels)
    metadata["annotations"] = dict(shared.annotations)
    if template.uid:
        # A template read from files has no uid, and the API server refuses an owner reference
        # without one (``ownerReferences.uid: "" must not be empty``): the binding is then written
        # without it, so ``simulate -o yaml | kubectl apply -f -`` is accepted. Live templates
        # always have one.
        metadata["ownerReferences"] = [
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": name,
                "uid": template.uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    metadata["finalizers"] = [
        constants.BINDING_FINALIZER if namespaced_binding else constants.CLUSTER_BINDING_FINALIZER
    ]
    resource: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    if namespaced_binding and template.namespaced and template.namespace is not None:
        resource["namespace"] = template.namespace
    resource["name"] = name
    if template.uid is not None:
        resource["uid"] = template.uid
    if template.metadata.resource_version is not None:
        resource["resourceVersion"] = template.metadata.resource_version
    spec: dict[str, Any] = {"resource": resource}
    if shared.propagate_deps:  # Go's omitempty drops false; keep the object minimal the same way.
        spec["propagateDeps"] = True
    if requirements is not None:
        spec["replicaRequirements"] = requirements.to_dict()
    spec["replicas"] = replicas
    spec["placement"] = json.loads(shared.placement)
    if shared.scheduler_name is not None:
        spec["schedulerName"] = shared.scheduler_name
    if shared.failover is not None:
        spec["failover"] = json.loads(shared.failover)
    if shared.conflict_resolution is not None:
        spec["conflictResolution"] = shared.conflict_resolution
    if shared.suspension is not None:
        spec["suspension"] = json.loads(shared.suspension)
    if shared.preserve_resources_on_deletion is not None:
        spec["preserveResourcesOnDeletion"] = shared.preserve_resources_on_deletion
    if namespaced_binding:
        if gates.priority_based_scheduling:
            priority = _schedule_priority(policy, priority_class_value)
            if priority is not None:
                spec["schedulePriority"] = priority.to_dict()
        if gates.workload_affinity:
            groups = _workload_affinity_groups(policy, template)
            if groups is not None:
                spec["workloadAffinityGroups"] = groups.to_dict()
    return {
        "apiVersion": WORK_API_VERSION,
        "kind": ResourceBinding.KIND if namespaced_binding else ClusterResourceBinding.KIND,
        "metadata": metadata,
        "spec": spec,
    }


def build_binding(
    template: ResourceTemplate,
    policy: Policy,
    *,
    gates: FeatureGates | None = None,
    priority_class_value: Callable[[str], int | None] | None = None,
    parts: MutableMapping[int, PolicyParts] | None = None,
) -> Binding:
    """The desired ResourceBinding / ClusterResourceBinding for ``template`` claimed by ``policy``.

    ``priority_class_value(name)`` returns the value of a ``scheduling.k8s.io/v1`` PriorityClass, or
    None when it does not exist; needed only when the policy has ``schedulePriority``.
    Raises ``BuildError`` (or ``InterpretError`` for a malformed template).
    """
    fields = build_binding_fields(
        template, policy, gates=gates, priority_class_value=priority_class_value, parts=parts
    )
    # Validated from the JSON form, so only the fields present count as set: callers that dump
    # with ``exclude_unset`` then get Karmada's omitempty shape, never explicit nulls.
    return binding_kind(policy, template).model_validate(fields)
