"""WorkloadRebalancer (``apps.karmada.io/v1alpha1``): a user asks for a fresh placement of workloads.

Cluster-scoped. ``spec.workloads`` names the resource templates (at least one); the controller
(``fleetsched.controller.rebalancer``) stamps ``spec.rescheduleTriggeredAt`` on each one's binding and
reports, per workload, ``Successful`` or ``Failed`` with a reason in ``status.observedWorkloads``.
``spec.ttlSecondsAfterFinished`` deletes the rebalancer that long after ``status.finishTime``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import ConfigDict, Field

from fleetsched.api._base import Int32, Int64, KarmadaModel, Time
from fleetsched.api.meta import ObjectMeta

APPS_API_VERSION = "apps.karmada.io/v1alpha1"

# ObservedWorkload.result
REBALANCE_SUCCESSFUL = "Successful"
REBALANCE_FAILED = "Failed"
# ObservedWorkload.reason
REBALANCE_OBJECT_NOT_FOUND = "ReferencedBindingNotFound"


class WorkloadReference(KarmadaModel):
    """One workload of ``spec.workloads``; no namespace means a cluster-scoped workload."""

    model_config = ConfigDict(frozen=True)

    api_version: str
    kind: str
    name: str
    namespace: str | None = None

    def sort_key(self) -> str:
        """The order ``status.observedWorkloads`` is kept in: apiVersion, kind, namespace, name."""
        return f"{self.api_version} {self.kind} {self.namespace or ''} {self.name}"

    def identity(self) -> tuple[str, str, str, str]:
        """Equality as Karmada's: an absent namespace and an empty one are the same."""
        return (self.api_version, self.kind, self.namespace or "", self.name)


class WorkloadRebalancerSpec(KarmadaModel):
    workloads: list[WorkloadReference] = Field(min_length=1)
    ttl_seconds_after_finished: Int32 | None = None


class ObservedWorkload(KarmadaModel):
    workload: WorkloadReference
    result: str | None = None
    reason: str | None = None


class WorkloadRebalancerStatus(KarmadaModel):
    observed_workloads: list[ObservedWorkload] | None = None
    observed_generation: Int64 | None = None
    finish_time: Time | None = None


class WorkloadRebalancer(KarmadaModel):
    KIND: ClassVar[str] = "WorkloadRebalancer"

    api_version: Literal["apps.karmada.io/v1alpha1"] = APPS_API_VERSION
    kind: Literal["WorkloadRebalancer"] = "WorkloadRebalancer"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: WorkloadRebalancerSpec
    status: WorkloadRebalancerStatus | None = None


__all__ = [
    "APPS_API_VERSION",
    "REBALANCE_FAILED",
    "REBALANCE_OBJECT_NOT_FOUND",
    "REBALANCE_SUCCESSFUL",
    "ObservedWorkload",
    "WorkloadRebalancer",
    "WorkloadRebalancerSpec",
    "WorkloadRebalancerStatus",
    "WorkloadReference",
]
