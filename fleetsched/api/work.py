"""ResourceBinding and ClusterResourceBinding (``work.karmada.io/v1alpha2``), spec and status as Karmada's
pkg/apis/work/v1alpha2 types define them.

Both kinds share one spec and one status type; only ``kind`` and scope differ. Replica counts are
non-negative int32 (a negative count is refused at load time).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from fleetsched.api._base import Int32, Int64, KarmadaModel, NonNegativeInt32, ResourceList, Time
from fleetsched.api.meta import Condition, NodeSelector, ObjectMeta, ObjectReference, Toleration
from fleetsched.api.policy import DispatchingOnClusters, FailoverBehavior, Placement

WORK_API_VERSION = "work.karmada.io/v1alpha2"

SCHEDULED = "Scheduled"
FULLY_APPLIED = "FullyApplied"


class NodeClaim(KarmadaModel):
    hard_node_affinity: NodeSelector | None = None
    node_selector: dict[str, str] | None = None
    tolerations: list[Toleration] | None = None


class ReplicaRequirements(KarmadaModel):
    node_claim: NodeClaim | None = None
    resource_request: ResourceList | None = None
    namespace: str | None = None
    priority_class_name: str | None = None


class ComponentReplicaRequirements(KarmadaModel):
    node_claim: NodeClaim | None = None
    resource_request: ResourceList | None = None
    priority_class_name: str | None = None


class Component(KarmadaModel):
    name: str = Field(max_length=32)
    replicas: NonNegativeInt32
    replica_requirements: ComponentReplicaRequirements | None = None


class ComponentReplicas(KarmadaModel):
    name: str
    replicas: NonNegativeInt32


class TargetCluster(KarmadaModel):
    name: str
    replicas: NonNegativeInt32 | None = None
    components: list[ComponentReplicas] | None = None


class GracefulEvictionTask(KarmadaModel):
    from_cluster: str
    purge_mode: Literal["Directly", "Gracefully", "Never"] | None = None
    replicas: NonNegativeInt32 | None = None
    reason: str = Field(min_length=1, max_length=32, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
    message: str | None = Field(default=None, max_length=1024)
    producer: str
    grace_period_seconds: Int32 | None = None
    suppress_deletion: bool | None = None
    preserved_label_state: dict[str, str] | None = None
    clusters_before_failover: list[str] | None = None
    creation_timestamp: Time | None = None


class BindingSnapshot(KarmadaModel):
    namespace: str | None = None
    name: str
    clusters: list[TargetCluster] | None = None


class BindingSuspension(KarmadaModel):
    dispatching: bool | None = None
    dispatching_on_clusters: DispatchingOnClusters | None = None
    scheduling: bool | None = None


class BindingSchedulePriority(KarmadaModel):
    priority: Int32 | None = Field(default=None, json_schema_extra={"default": 0})


class WorkloadAffinityGroups(KarmadaModel):
    affinity_group: str | None = None
    anti_affinity_group: str | None = None


class ResourceBindingSpec(KarmadaModel):
    resource: ObjectReference
    propagate_deps: bool | None = None
    replica_requirements: ReplicaRequirements | None = None
    # Defaults to 0 in Python only: the CRD has no default, as Go's omitempty drops a zero.
    replicas: NonNegativeInt32 = Field(default=0, json_schema_extra={"x-fleetsched-no-default": True})
    components: list[Component] | None = None
    clusters: list[TargetCluster] | None = None
    placement: Placement | None = None
    graceful_eviction_tasks: list[GracefulEvictionTask] | None = None
    required_by: list[BindingSnapshot] | None = None
    scheduler_name: str | None = None
    failover: FailoverBehavior | None = None
    conflict_resolution: Literal["Abort", "Overwrite"] | None = Field(
        default=None, json_schema_extra={"default": "Abort"}
    )
    reschedule_triggered_at: Time | None = None
    suspension: BindingSuspension | None = None
    preserve_resources_on_deletion: bool | None = None
    schedule_priority: BindingSchedulePriority | None = None
    workload_affinity_groups: WorkloadAffinityGroups | None = None

    def is_workload(self) -> bool:
        """Whether the binding is divided by replicas: replicas > 0, or requirements known, or at least
        one component."""
        return self.replicas > 0 or self.replica_requirements is not None or bool(self.components)


class AggregatedStatusItem(KarmadaModel):
    cluster_name: str
    status: dict[str, Any] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-preserve-unknown-fields": True}
    )
    applied: bool | None = None
    applied_message: str | None = None
    health: Literal["Healthy", "Unhealthy", "Unknown"] | None = None


class ResourceBindingStatus(KarmadaModel):
    scheduler_observed_generation: Int64 | None = None
    scheduler_observing_affinity_name: str | None = None
    last_scheduled_time: Time | None = None
    conditions: list[Condition] | None = None
    aggregated_status: list[AggregatedStatusItem] | None = None

    def condition(self, condition_type: str) -> Condition | None:
        for condition in self.conditions or ():
            if condition.type == condition_type:
                return condition
        return None


class _BindingBase(KarmadaModel):
    KIND: ClassVar[str]
    NAMESPACED: ClassVar[bool]

    api_version: Literal["work.karmada.io/v1alpha2"] = WORK_API_VERSION
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceBindingSpec
    status: ResourceBindingStatus | None = None

    def key(self) -> str:
        """``namespace/name`` for a ResourceBinding, ``name`` for a ClusterResourceBinding."""
        if self.NAMESPACED and self.metadata.namespace:
            return f"{self.metadata.namespace}/{self.metadata.name}"
        return self.metadata.name or ""


class ResourceBinding(_BindingBase):
    KIND: ClassVar[str] = "ResourceBinding"
    NAMESPACED: ClassVar[bool] = True

    kind: Literal["ResourceBinding"] = "ResourceBinding"


class ClusterResourceBinding(_BindingBase):
    KIND: ClassVar[str] = "ClusterResourceBinding"
    NAMESPACED: ClassVar[bool] = False

    kind: Literal["ClusterResourceBinding"] = "ClusterResourceBinding"


Binding = ResourceBinding | ClusterResourceBinding

__all__ = [
    "FULLY_APPLIED",
    "SCHEDULED",
    "WORK_API_VERSION",
    "AggregatedStatusItem",
    "Binding",
    "BindingSchedulePriority",
    "BindingSnapshot",
    "BindingSuspension",
    "ClusterResourceBinding",
    "Component",
    "ComponentReplicaRequirements",
    "ComponentReplicas",
    "GracefulEvictionTask",
    "NodeClaim",
    "ReplicaRequirements",
    "ResourceBinding",
    "ResourceBindingSpec",
    "ResourceBindingStatus",
    "TargetCluster",
    "WorkloadAffinityGroups",
]
