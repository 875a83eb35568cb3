"""Building the desired binding for a template and the policy that claims it (api.md §7.6). Pure.

The result is what Karmada's detector would create: name, owner reference, finalizer, claim
labels/annotations, and the spec copied from the policy plus the replica interpretation (§7.7).
Never sets ``spec.clusters``, graceful eviction tasks, ``requiredBy`` or status: those belong to others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fleetsched.api.load import ResourceTemplate
from fleetsched.api.meta import ObjectMeta, ObjectReference, OwnerReference
from fleetsched.api.policy import ClusterPropagationPolicy, Placement, PropagationPolicy, Suspension
from fleetsched.api.work import (
    BindingSchedulePriority,
    BindingSuspension,
    ClusterResourceBinding,
    ResourceBinding,
    ResourceBindingSpec,
    WorkloadAffinityGroups,
)
from fleetsched.detector import constants
from fleetsched.detector.interpret import interpret_replicas

__all__ = ["BuildError", "FeatureGates", "binding_kind", "binding_name", "build_binding", "claim_metadata"]

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
    """``lowercase(<name with ':' → '.'> + '-' + <kind>)``, no hashing or truncation (api.md §7.6)."""
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
    """The claim labels and annotations of a policy (api.md §7.5), as put on templates and bindings."""
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


def build_binding(
    template: ResourceTemplate,
    policy: Policy,
    *,
    gates: FeatureGates | None = None,
    priority_class_value: Callable[[str], int | None] | None = None,
) -> Binding:
    """The desired ResourceBinding / ClusterResourceBinding for ``template`` claimed by ``policy``.

    ``priority_class_value(name)`` returns the value of a ``scheduling.k8s.io/v1`` PriorityClass, or
    None when it does not exist; needed only when the policy has ``schedulePriority``.
    Raises ``BuildError`` (or ``InterpretError`` for a malformed template).
    """
    gates = gates or FeatureGates()
    cls = binding_kind(policy, template)
    namespaced_binding = cls is ResourceBinding
    replicas, requirements = interpret_replicas(
        template.api_version,
        template.kind,
        template.raw,
        resource_quota_estimate=gates.resource_quota_estimate,
    )
    labels, annotations = claim_metadata(policy)
    spec = policy.spec
    metadata = ObjectMeta(
        name=binding_name(template.name, template.kind),
        namespace=template.namespace if namespaced_binding else None,
        labels=labels,
        annotations=annotations,
        owner_references=[
            OwnerReference(
                api_version=template.api_version,
                kind=template.kind,
                name=template.name,
                uid=template.uid or "",
                controller=True,
                block_owner_deletion=True,
            )
        ],
        finalizers=[
            constants.BINDING_FINALIZER if namespaced_binding else constants.CLUSTER_BINDING_FINALIZER
        ],
    )
    binding_spec = ResourceBindingSpec(
        resource=ObjectReference(
            api_version=template.api_version,
            kind=template.kind,
            namespace=template.namespace if namespaced_binding and template.namespaced else None,
            name=template.name,
            uid=template.uid,
            resource_version=template.metadata.resource_version,
        ),
        # Go's omitempty drops false; keep the object minimal the same way.
        propagate_deps=True if spec.propagate_deps else None,
        replicas=replicas,
        replica_requirements=requirements,
        # Karmada's policy spec holds placement by value, so a binding always has one (maybe {}).
        placement=spec.placement.model_copy(deep=True) if spec.placement is not None else Placement(),
        scheduler_name=spec.scheduler_name,
        failover=spec.failover.model_copy(deep=True) if spec.failover is not None else None,
        conflict_resolution=spec.conflict_resolution,
        preserve_resources_on_deletion=spec.preserve_resources_on_deletion,
        suspension=_suspension(spec.suspension),
    )
    if namespaced_binding:
        if gates.priority_based_scheduling:
            binding_spec.schedule_priority = _schedule_priority(policy, priority_class_value)
        if gates.workload_affinity:
            binding_spec.workload_affinity_groups = _workload_affinity_groups(policy, template)
    built = cls(metadata=metadata, spec=binding_spec)
    # Re-read from JSON so that only the fields actually present count as set: callers that dump
    # with ``exclude_unset`` then get Karmada's omitempty shape, never explicit nulls.
    return cls.model_validate(built.to_dict())
