"""What a WorkloadRebalancer reconcile decides, as Karmada's ``workload-rebalancer`` controller decides it.

Pure functions, no I/O:

* ``sync_observed``: ``status.observedWorkloads`` brought in line with ``spec.workloads`` (a new
  workload is added without a result; one taken out of the spec is kept only if it succeeded;
  the list is sorted by apiVersion, kind, namespace, name);
* ``binding_of``: the binding a workload's reschedule is written to (a ResourceBinding in the
  workload's namespace, a ClusterResourceBinding without one; named as the detector names it);
* ``needs_trigger``: whether a binding's ``spec.rescheduleTriggeredAt`` is older than the
  rebalancer (then it is set to the rebalancer's creation time);
* ``finished_status``: the status to write (``observedGeneration``, and ``finishTime`` set when the
  status changed and no workload waits for a retry);
* ``ttl_remaining``: seconds until a finished rebalancer with ``ttlSecondsAfterFinished`` is deleted.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from fleetsched.api.apps import (
    REBALANCE_FAILED,
    REBALANCE_OBJECT_NOT_FOUND,
    REBALANCE_SUCCESSFUL,
    ObservedWorkload,
    WorkloadRebalancer,
    WorkloadRebalancerStatus,
    WorkloadReference,
)
from fleetsched.detector import binding_name

RESOURCE_BINDING, CLUSTER_RESOURCE_BINDING = "ResourceBinding", "ClusterResourceBinding"


@dataclass(frozen=True, slots=True)
class BindingRef:
    """The binding a workload's reschedule is written to."""

    kind: str  # ResourceBinding or ClusterResourceBinding
    namespace: str | None
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


def binding_of(workload: WorkloadReference) -> BindingRef:
    """A namespaced workload's ResourceBinding, a cluster-scoped one's (no namespace)
    ClusterResourceBinding, named ``<name>-<kind>`` in lower case as the detector names them."""
    name = binding_name(workload.name, workload.kind)
    if workload.namespace:
        return BindingRef(RESOURCE_BINDING, workload.namespace, name)
    return BindingRef(CLUSTER_RESOURCE_BINDING, None, name)


def sync_observed(rebalancer: WorkloadRebalancer) -> list[ObservedWorkload]:
    """``status.observedWorkloads`` for the current spec: entries of workloads still in the spec are
    kept as they are (a listed workload is rebalanced once), a workload new to the spec is added
    without a result, and one no longer in the spec stays only if it was Successful. A workload
    listed twice is observed once. Sorted by apiVersion, kind, namespace, name."""
    wanted: dict[tuple[str, str, str, str], WorkloadReference] = {}
    for workload in rebalancer.spec.workloads:
        wanted.setdefault(workload.identity(), workload)
    observed: list[ObservedWorkload] = []
    previous = rebalancer.status.observed_workloads if rebalancer.status is not None else None
    for item in previous or ():
        identity = item.workload.identity()
        if identity in wanted:
            observed.append(item)
            del wanted[identity]
        elif item.result == REBALANCE_SUCCESSFUL:
            observed.append(item)
    observed.extend(ObservedWorkload(workload=workload) for workload in wanted.values())
    observed.sort(key=lambda item: item.workload.sort_key())
    return observed


def pending(observed: list[ObservedWorkload]) -> list[int]:
    """Indexes of the workloads still to be rebalanced: no result yet (Failed ones are final)."""
    done = (REBALANCE_SUCCESSFUL, REBALANCE_FAILED)
    return [i for i, item in enumerate(observed) if item.result not in done]


def needs_trigger(created: dt.datetime | None, triggered_at: dt.datetime | None) -> bool:
    """The binding has no reschedule request, or an older one than the rebalancer's creation."""
    if triggered_at is None:
        return True
    return created is not None and created > triggered_at


def succeeded(item: ObservedWorkload) -> ObservedWorkload:
    return ObservedWorkload(workload=item.workload, result=REBALANCE_SUCCESSFUL)


def binding_not_found(item: ObservedWorkload) -> ObservedWorkload:
    """Final: the workload has no binding (no such workload, or no policy claims it)."""
    return ObservedWorkload(
        workload=item.workload, result=REBALANCE_FAILED, reason=REBALANCE_OBJECT_NOT_FOUND
    )


def finished_status(
    rebalancer: WorkloadRebalancer, observed: list[ObservedWorkload], retries: int, now: dt.datetime
) -> WorkloadRebalancerStatus:
    """The status after a pass: the observed workloads, ``observedGeneration``, and ``finishTime``,
    kept from before unless the rest of the status changed with nothing left to retry (then now,
    to the second, as a metav1.Time is written)."""
    old = rebalancer.status or WorkloadRebalancerStatus()
    status = WorkloadRebalancerStatus(
        observed_workloads=observed or None,
        observed_generation=rebalancer.metadata.generation,
        finish_time=old.finish_time,
    )
    if status != old and retries == 0:
        status.finish_time = now.astimezone(dt.UTC).replace(microsecond=0)
    return status


def ttl_remaining(rebalancer: WorkloadRebalancer, now: dt.datetime) -> float | None:
    """Seconds left before the finished rebalancer is deleted (<= 0: now); None without a TTL.
    Raises ``ValueError`` when a TTL is set but the rebalancer has not finished."""
    ttl = rebalancer.spec.ttl_seconds_after_finished
    if ttl is None:
        return None
    finish = rebalancer.status.finish_time if rebalancer.status is not None else None
    if finish is None:
        raise ValueError("status.finishTime: not set while spec.ttlSecondsAfterFinished is")
    return (finish + dt.timedelta(seconds=ttl) - now).total_seconds()
