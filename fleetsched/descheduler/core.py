"""The descheduler's decisions, as karmada-descheduler takes them; pure: no client, no I/O.

Which bindings are looked at (Karmada's ``FilterBindings``): a ResourceBinding of an ``apps/v1``
``Deployment`` whose applied placement (annotation ``policy.karmada.io/applied-placement``, the
placement the last scheduling used) divides replicas dynamically: ``Divided`` with the
``Aggregated`` preference, or ``Weighted`` by a ``dynamicWeight``. A static weight list or a
duplicated placement is never descheduled: the scheduler would only put the replicas back.

The arithmetic (Karmada's ``SchedulingResultHelper`` and ``updateScheduleResult``), per target
cluster of ``spec.clusters``:

* ``ready`` is ``readyReplicas`` of that cluster's entry in ``status.aggregatedStatus`` (-1 when
  no entry says it: nothing is known to be ready);
* a cluster is *undesired* when ``ready < spec``; only undesired clusters' estimators are asked
  how many of the workload's pods have been unschedulable for longer than the threshold;
* every estimator's answer lowers the count (the smallest wins); an answer of -1 ("cannot
  tell") is skipped; no usable answer at all means 0;
* a cluster with ``0 < unschedulable <= spec`` gets ``spec - unschedulable`` replicas, but never
  fewer than its ready ones (when ``ready <= spec``); the removed replicas are the cluster's
  descheduled count.

When anything was removed, ``spec.clusters`` is written with the new counts and an Event says
``Binding has been descheduled, N replica(s) in cluster(C), ..., T total descheduled
replica(s)``. The targets then add up to less than ``spec.replicas``, which the scheduler treats
as a scale-up and places the difference where there is room.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

APPLIED_PLACEMENT_ANNOTATION = "policy.karmada.io/applied-placement"
# Karmada's estimator answer "cannot tell" (estimatorclient.UnauthenticReplica); also the ready
# count of a cluster no aggregated status speaks for.
UNAUTHENTIC_REPLICA = -1
# The boundary Karmada starts from before the estimators lower it (math.MaxInt32).
MAX_INT32 = 2**31 - 1
# The kinds Karmada deschedules (its supportedGVKs): (apiVersion, kind).
SUPPORTED_KINDS = frozenset({("apps/v1", "Deployment")})

REASON_SUCCEED = "DescheduleBindingSucceed"
REASON_FAILED = "DescheduleBindingFailed"
SUCCESS_MESSAGE = "Binding has been descheduled"

Obj = Mapping[str, Any]


class PlacementError(ValueError):
    """The applied-placement annotation is not a JSON placement (one line)."""


def applied_placement(binding: Obj) -> Mapping[str, Any] | None:
    """The placement the last scheduling applied, from the binding's annotation; None when the
    annotation is absent or empty; PlacementError when it is not a JSON object."""
    annotations = ((binding.get("metadata") or {}).get("annotations")) or {}
    text = annotations.get(APPLIED_PLACEMENT_ANNOTATION)
    if not text:
        return None
    try:
        placement = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise PlacementError(f"annotation {APPLIED_PLACEMENT_ANNOTATION}: not JSON ({exc})") from None
    if not isinstance(placement, Mapping):
        raise PlacementError(f"annotation {APPLIED_PLACEMENT_ANNOTATION}: not a JSON object")
    return placement


def is_replica_dynamic_divided(placement: Mapping[str, Any]) -> bool:
    """Karmada's IsReplicaDynamicDivided: Divided, and Aggregated or weighted by a dynamicWeight."""
    strategy = placement.get("replicaScheduling")
    if not isinstance(strategy, Mapping):
        return False  # no replicaScheduling: Duplicated
    if strategy.get("replicaSchedulingType") != "Divided":
        return False
    preference = strategy.get("replicaDivisionPreference")
    if preference == "Aggregated":
        return True
    if preference == "Weighted":
        weights = strategy.get("weightPreference")
        return isinstance(weights, Mapping) and bool(weights.get("dynamicWeight"))
    return False


def supported_kind(binding: Obj) -> bool:
    resource = ((binding.get("spec") or {}).get("resource")) or {}
    return (resource.get("apiVersion"), resource.get("kind")) in SUPPORTED_KINDS


def is_candidate(binding: Obj) -> bool:
    """Karmada's FilterBindings for one binding (a bad annotation: not a candidate; the caller
    logs ``PlacementError`` when it wants to, through ``applied_placement``)."""
    if not supported_kind(binding):
        return False
    try:
        placement = applied_placement(binding)
    except PlacementError:
        return False
    return placement is not None and is_replica_dynamic_divided(placement)


def filter_bindings(bindings: Sequence[Obj]) -> list[Obj]:
    return [binding for binding in bindings if is_candidate(binding)]


@dataclass(frozen=True, slots=True)
class ClusterReplicaStatus:
    """One target cluster of a binding: its assigned (``spec``), ready and unschedulable replicas."""

    cluster: str
    spec: int
    ready: int
    unschedulable: int = 0


def ready_replicas(binding: Obj) -> dict[str, int]:
    """``readyReplicas`` by cluster from ``status.aggregatedStatus``; an entry without a status, or
    whose status has no numeric ``readyReplicas``, says nothing."""
    out: dict[str, int] = {}
    for item in ((binding.get("status") or {}).get("aggregatedStatus")) or ():
        if not isinstance(item, Mapping):
            continue
        status = item.get("status")
        if not isinstance(status, Mapping) or "readyReplicas" not in status:
            continue
        ready = status["readyReplicas"]
        if isinstance(ready, bool) or not isinstance(ready, int | float):
            continue
        out[str(item.get("clusterName") or "")] = int(ready)
    return out


def replica_statuses(binding: Obj) -> list[ClusterReplicaStatus]:
    """One status per entry of ``spec.clusters``, in its order."""
    ready = ready_replicas(binding)
    out = []
    for target in ((binding.get("spec") or {}).get("clusters")) or ():
        name = str(target.get("name") or "")
        out.append(ClusterReplicaStatus(name, int(target.get("replicas") or 0),
                                        ready.get(name, UNAUTHENTIC_REPLICA)))
    return out


def undesired(statuses: Sequence[ClusterReplicaStatus]) -> list[ClusterReplicaStatus]:
    """The clusters whose ready replicas fall short of their assigned ones."""
    return [status for status in statuses if status.ready < status.spec]


def fill_unschedulable(
    statuses: Sequence[ClusterReplicaStatus], answers: Sequence[Sequence[int] | None]
) -> list[ClusterReplicaStatus]:
    """``statuses`` with the undesired clusters' unschedulable counts from the estimators'
    ``answers`` (one list per estimator, aligned with ``undesired(statuses)``; None for an
    estimator whose call failed). The smallest answer wins; -1 is skipped; none at all is 0."""
    wanted = undesired(statuses)
    bound = {id(status): MAX_INT32 for status in wanted}
    for answer in answers:
        if answer is None:
            continue
        for status, replicas in zip(wanted, answer, strict=False):
            if replicas == UNAUTHENTIC_REPLICA:
                continue
            bound[id(status)] = min(bound[id(status)], replicas)
    out = []
    for status in statuses:
        if id(status) not in bound:
            out.append(status)
            continue
        count = bound[id(status)]
        out.append(replace(status, unschedulable=0 if count == MAX_INT32 else count))
    return out


@dataclass(frozen=True, slots=True)
class Descheduling:
    """What one binding loses: the new replicas of each target (in ``spec.clusters`` order), the
    replicas removed per cluster, their total, and the Event's message."""

    targets: tuple[int, ...]
    removed: tuple[tuple[str, int], ...]
    total: int

    @property
    def message(self) -> str:
        parts = [SUCCESS_MESSAGE]
        parts += [f"{count} replica(s) in cluster({cluster})" for cluster, count in self.removed]
        parts.append(f"{self.total} total descheduled replica(s)")
        return ", ".join(parts)


def deschedule(statuses: Sequence[ClusterReplicaStatus]) -> Descheduling | None:
    """The new targets after taking the unschedulable replicas out (never below the ready ones);
    None when nothing is removed."""
    targets: list[int] = []
    removed: list[tuple[str, int]] = []
    for status in statuses:
        target = status.spec
        if 0 < status.unschedulable <= status.spec:
            target = status.spec - status.unschedulable
            if target < status.ready <= status.spec:
                target = status.ready
            removed.append((status.cluster, status.spec - target))
        targets.append(target)
    total = sum(count for _, count in removed)
    if total == 0:
        return None
    return Descheduling(tuple(targets), tuple(removed), total)


def updated_clusters(binding: Obj, result: Descheduling) -> list[dict[str, Any]]:
    """``spec.clusters`` with the new replicas (every other field of an entry kept)."""
    clusters = ((binding.get("spec") or {}).get("clusters")) or ()
    return [{**dict(target), "replicas": replicas} for target, replicas in zip(clusters, result.targets,
                                                                                strict=True)]
