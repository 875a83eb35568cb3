"""PropagationPolicy and ClusterPropagationPolicy (``policy.karmada.io/v1alpha1``), spec as Karmada's
pkg/apis/policy/v1alpha1 types define it.

The models are faithful: a field absent in the input is ``None`` here, because "absent" and
"explicitly empty" differ in Karmada (e.g. ``clusterAffinities: []``). CRD defaults are recorded
in the JSON schema only; ``fleetsched.api.defaults`` applies them like the API server. Only
schema-level rules (the CRD's OpenAPI schema) are enforced; the webhook's rules live in
``fleetsched.webhook``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from fleetsched.api._base import Int32, KarmadaModel, PositiveInt64
from fleetsched.api.meta import LabelSelector, NodeSelectorRequirement, ObjectMeta, Toleration

POLICY_API_VERSION = "policy.karmada.io/v1alpha1"

ReplicaSchedulingType = Literal["Duplicated", "Divided"]
ReplicaDivisionPreference = Literal["Aggregated", "Weighted"]
SpreadFieldValue = Literal["cluster", "region", "zone", "provider"]


class ResourceSelector(KarmadaModel):
    api_version: str
    kind: str
    namespace: str | None = None
    name: str | None = None
    label_selector: LabelSelector | None = None


class FieldSelector(KarmadaModel):
    match_expressions: list[NodeSelectorRequirement] | None = None


class ClusterAffinity(KarmadaModel):
    label_selector: LabelSelector | None = None
    field_selector: FieldSelector | None = None
    cluster_names: list[str] | None = None
    exclude: list[str] | None = None

    def is_empty(self) -> bool:
        """No criterion at all (selects every cluster)."""
        return (
            self.label_selector is None
            and self.field_selector is None
            and not self.cluster_names
            and not self.exclude
        )

    def inline_affinity(self) -> ClusterAffinity:
        """Just the four cluster-filter fields, as a plain ClusterAffinity."""
        return ClusterAffinity(
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            cluster_names=self.cluster_names,
            exclude=self.exclude,
        )


class OverflowClusterAffinity(ClusterAffinity):
    affinity_name: str = Field(min_length=1, max_length=32)


class ClusterAffinityTerm(ClusterAffinity):
    affinity_name: str = Field(min_length=1, max_length=32)
    overflow_affinities: list[OverflowClusterAffinity] | None = None


class SpreadConstraint(KarmadaModel):
    spread_by_field: SpreadFieldValue | None = None
    spread_by_label: str | None = None
    max_groups: int | None = None
    min_groups: int | None = None


class StaticClusterWeight(KarmadaModel):
    target_cluster: ClusterAffinity
    weight: PositiveInt64


class ClusterPreferences(KarmadaModel):
    static_weight_list: list[StaticClusterWeight] | None = None
    dynamic_weight: Literal["AvailableReplicas"] | None = None


class ReplicaSchedulingStrategy(KarmadaModel):
    replica_scheduling_type: ReplicaSchedulingType | None = Field(
        default=None, json_schema_extra={"default": "Divided"}
    )
    replica_division_preference: ReplicaDivisionPreference | None = None
    weight_preference: ClusterPreferences | None = None


class WorkloadAffinityTerm(KarmadaModel):
    group_by_label_key: str


class WorkloadAffinity(KarmadaModel):
    affinity: WorkloadAffinityTerm | None = None
    anti_affinity: WorkloadAffinityTerm | None = None


class Placement(KarmadaModel):
    cluster_affinity: ClusterAffinity | None = None
    cluster_affinities: list[ClusterAffinityTerm] | None = None
    cluster_tolerations: list[Toleration] | None = None
    spread_constraints: list[SpreadConstraint] | None = None
    replica_scheduling: ReplicaSchedulingStrategy | None = None
    workload_affinity: WorkloadAffinity | None = None

    def replica_scheduling_type(self) -> ReplicaSchedulingType:
        """Karmada treats an absent ``replicaScheduling`` as Duplicated and an absent type inside a
        present one as the CRD default, Divided."""
        if self.replica_scheduling is None:
            return "Duplicated"
        return self.replica_scheduling.replica_scheduling_type or "Divided"


class DispatchingOnClusters(KarmadaModel):
    cluster_names: list[str] | None = None


class Suspension(KarmadaModel):
    dispatching: bool | None = None
    dispatching_on_clusters: DispatchingOnClusters | None = None


class StatePreservationRule(KarmadaModel):
    alias_label_name: str
    json_path: str


class StatePreservation(KarmadaModel):
    rules: list[StatePreservationRule]


class DecisionConditions(KarmadaModel):
    # No minimum here: a negative value is the webhook's error to report, with Karmada's message.
    toleration_seconds: Int32 | None = Field(default=None, json_schema_extra={"default": 300})


class ApplicationFailoverBehavior(KarmadaModel):
    decision_conditions: DecisionConditions
    purge_mode: Literal["Directly", "Gracefully", "Never"] | None = Field(
        default=None, json_schema_extra={"default": "Gracefully"}
    )
    grace_period_seconds: Int32 | None = None
    state_preservation: StatePreservation | None = None


class ClusterFailoverBehavior(KarmadaModel):
    purge_mode: Literal["Directly", "Gracefully"] | None = Field(
        default=None, json_schema_extra={"default": "Gracefully"}
    )
    state_preservation: StatePreservation | None = None


class FailoverBehavior(KarmadaModel):
    application: ApplicationFailoverBehavior | None = None
    cluster: ClusterFailoverBehavior | None = None


class SchedulePriority(KarmadaModel):
    priority_class_source: Literal["KubePriorityClass"]
    priority_class_name: str


class PropagationSpec(KarmadaModel):
    resource_selectors: list[ResourceSelector] = Field(min_length=1)
    association: bool | None = None
    propagate_deps: bool | None = None
    placement: Placement | None = None
    priority: Int32 | None = Field(default=None, json_schema_extra={"default": 0})
    preemption: Literal["Always", "Never"] | None = Field(
        default=None, json_schema_extra={"default": "Never"}
    )
    dependent_overrides: list[str] | None = None
    scheduler_name: str | None = Field(default=None, json_schema_extra={"default": "default-scheduler"})
    failover: FailoverBehavior | None = None
    conflict_resolution: Literal["Abort", "Overwrite"] | None = Field(
        default=None, json_schema_extra={"default": "Abort"}
    )
    activation_preference: Literal["Lazy"] | None = None
    suspension: Suspension | None = None
    preserve_resources_on_deletion: bool | None = None
    schedule_priority: SchedulePriority | None = None

    def explicit_priority(self) -> int:
        return self.priority or 0


class _PolicyBase(KarmadaModel):
    KIND: ClassVar[str]
    NAMESPACED: ClassVar[bool]

    api_version: Literal["policy.karmada.io/v1alpha1"] = POLICY_API_VERSION
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PropagationSpec


class PropagationPolicy(_PolicyBase):
    KIND: ClassVar[str] = "PropagationPolicy"
    NAMESPACED: ClassVar[bool] = True

    kind: Literal["PropagationPolicy"] = "PropagationPolicy"


class ClusterPropagationPolicy(_PolicyBase):
    KIND: ClassVar[str] = "ClusterPropagationPolicy"
    NAMESPACED: ClassVar[bool] = False

    kind: Literal["ClusterPropagationPolicy"] = "ClusterPropagationPolicy"


Policy = PropagationPolicy | ClusterPropagationPolicy

__all__ = [
    "POLICY_API_VERSION",
    "ApplicationFailoverBehavior",
    "ClusterAffinity",
    "ClusterAffinityTerm",
    "ClusterFailoverBehavior",
    "ClusterPreferences",
    "ClusterPropagationPolicy",
    "DecisionConditions",
    "DispatchingOnClusters",
    "FailoverBehavior",
    "FieldSelector",
    "OverflowClusterAffinity",
    "Placement",
    "Policy",
    "PropagationPolicy",
    "PropagationSpec",
    "ReplicaDivisionPreference",
    "ReplicaSchedulingStrategy",
    "ReplicaSchedulingType",
    "ResourceSelector",
    "SchedulePriority",
    "SpreadConstraint",
    "SpreadFieldValue",
    "StatePreservation",
    "StatePreservationRule",
    "StaticClusterWeight",
    "Suspension",
    "WorkloadAffinity",
    "WorkloadAffinityTerm",
]
