"""When the operator schedules a binding, and which watch events are worth queueing.

Pure functions over the JSON form of bindings and Clusters, reproducing karmada-scheduler:

* ``passes_filter`` — the binding event filter (spec/scheduler.md §3.1);
* ``binding_update_enqueues`` / ``cluster_update_reconciles`` / ``cluster_matches_binding`` — which
  update events enqueue which bindings (§3.1);
* ``should_schedule`` — the ordered checks of §3.4 deciding whether a dequeued binding gets a
  scheduling attempt, only its observed generation patched, or nothing.

A binding is never rescheduled because of the operator's own writes: the status write leaves the
generation alone, and the spec write's new generation is recorded by the caller so its watch
event is not mistaken for a user change (``binding_update_enqueues(..., own_generation=...)``).
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from fleetsched.controller.placement_json import placement_changed

DEFAULT_SCHEDULER_NAME = "default-scheduler"
APPLIED_PLACEMENT_ANNOTATION = "policy.karmada.io/applied-placement"
PERMANENT_ID_LABELS = (
    "propagationpolicy.karmada.io/permanent-id",
    "clusterpropagationpolicy.karmada.io/permanent-id",
    "binding.karmada.io/managed-by",
)

Obj = Mapping[str, Any]


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _status(obj: Obj) -> Mapping[str, Any]:
    return obj.get("status") or {}


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def effective_scheduler_name(binding: Obj) -> str:
    return _spec(binding).get("schedulerName") or DEFAULT_SCHEDULER_NAME


def scheduling_suspended(binding: Obj) -> bool:
    return ((_spec(binding).get("suspension") or {}).get("scheduling")) is True


def passes_filter(binding: Obj, scheduler_names: str | Collection[str]) -> bool:
    """The binding event filter: ours (a profile serves its schedulerName), not suspended, and
    created by a policy controller."""
    served = (scheduler_names,) if isinstance(scheduler_names, str) else scheduler_names
    if effective_scheduler_name(binding) not in served or scheduling_suspended(binding):
        return False
    labels = _meta(binding).get("labels") or {}
    return any(labels.get(label) for label in PERMANENT_ID_LABELS)


def generation(obj: Obj) -> int:
    return int(_meta(obj).get("generation") or 0)


def binding_priority(binding: Obj) -> int:
    return int(((_spec(binding).get("schedulePriority") or {}).get("priority")) or 0)


def binding_update_enqueues(old: Obj, new: Obj, *, own_generation: int | None = None) -> bool:
    """Both old and new pass the filter: enqueue only when the generation moved, and not to ours."""
    new_generation = generation(new)
    if new_generation == generation(old):
        return False
    return own_generation is None or new_generation != own_generation


def cluster_update_reconciles(old: Obj, new: Obj) -> list[Obj]:
    """The Cluster objects to reconcile bindings against for a Cluster update (§3.1)."""
    if _meta(new).get("deletionTimestamp") and not _meta(old).get("deletionTimestamp"):
        return [new]
    labels_changed = (_meta(old).get("labels") or {}) != (_meta(new).get("labels") or {})
    if labels_changed or generation(old) != generation(new):
        return [old, new]
    return []


def cluster_matches_binding(cluster: Obj, binding: Obj, matches: Callable[[Obj, Obj], bool]) -> bool:
    """Whether a change of ``cluster`` should enqueue ``binding`` (§3.1 "Reconciling a cluster").

    ``matches(cluster, affinity_json)`` is the core's ``ClusterMatches`` (§5.3) over JSON forms.
    """
    placement = _spec(binding).get("placement") or {}
    terms = placement.get("clusterAffinities")
    if terms is not None:
        if _status(binding).get("schedulerObservedGeneration") != generation(binding):
            return True
        observed = _status(binding).get("schedulerObservingAffinityName") or ""
        term = next((t for t in terms if t.get("affinityName") == observed), terms[0] if terms else None)
        affinity = (
            None
            if term is None
            else {k: v for k, v in term.items() if k not in ("affinityName", "overflowAffinities")}
        )
    else:
        affinity = placement.get("clusterAffinity")
    return affinity is None or matches(cluster, affinity)


def is_workload(binding: Obj) -> bool:
    spec = _spec(binding)
    return (
        int(spec.get("replicas") or 0) > 0
        or spec.get("replicaRequirements") is not None
        or len(spec.get("components") or ()) >= 1
    )


def is_duplicated(placement: Mapping[str, Any]) -> bool:
    replica_scheduling = placement.get("replicaScheduling")
    return replica_scheduling is None or replica_scheduling.get("replicaSchedulingType") == "Duplicated"


def parse_time(text: str | None) -> dt.datetime | None:
    """An RFC 3339 time as stored by the API server, truncated to whole seconds."""
    if not text:
        return None
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.replace(microsecond=0)


def reschedule_required(binding: Obj) -> bool:
    """``rescheduleTriggeredAt`` strictly after ``lastScheduledTime`` (second precision, §3.4 item 3)."""
    triggered = parse_time(_spec(binding).get("rescheduleTriggeredAt"))
    last = parse_time(_status(binding).get("lastScheduledTime"))
    return triggered is not None and last is not None and triggered > last


def replicas_changed(binding: Obj) -> bool:
    spec = _spec(binding)
    placement = spec.get("placement") or {}
    replica_scheduling = placement.get("replicaScheduling")
    if replica_scheduling is None:
        return False
    targets = spec.get("clusters") or ()
    replicas = int(spec.get("replicas") or 0)
    kind = replica_scheduling.get("replicaSchedulingType")
    if kind == "Duplicated":
        return any(int(t.get("replicas") or 0) != replicas for t in targets)
    if kind == "Divided":
        return sum(int(t.get("replicas") or 0) for t in targets) != replicas
    return False


class Verdict(enum.Enum):
    SCHEDULE = "schedule"
    OBSERVE_GENERATION = "observe-generation"  # only patch status.schedulerObservedGeneration
    NOTHING = "nothing"


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    reason: str  # why (a stable word for logs and metrics)


def should_schedule(binding: Obj, terminating_clusters: Collection[str]) -> Decision:
    """The §3.4 checks in order; the first that holds triggers a scheduling attempt."""
    spec = _spec(binding)
    placement = spec.get("placement") or {}
    status = _status(binding)
    annotation = (_meta(binding).get("annotations") or {}).get(APPLIED_PLACEMENT_ANNOTATION)
    observed_name = status.get("schedulerObservingAffinityName") or ""
    if placement_changed(spec.get("placement"), annotation, observed_name):
        return Decision(Verdict.SCHEDULE, "PlacementChanged")
    if replicas_changed(binding):
        return Decision(Verdict.SCHEDULE, "ReplicasChanged")
    if reschedule_required(binding):
        return Decision(Verdict.SCHEDULE, "RescheduleTriggered")
    if not is_workload(binding) or is_duplicated(placement):
        return Decision(Verdict.SCHEDULE, "AlwaysSchedule")
    if any(t.get("name") in terminating_clusters for t in spec.get("clusters") or ()):
        return Decision(Verdict.SCHEDULE, "TargetClusterTerminating")
    if not any(c.get("type") == "Scheduled" for c in status.get("conditions") or ()):
        # The result was written but its status never was (a crash or a failed status write
        # between the two writes): running again gives the same result, so only the status is
        # written. Karmada would leave such a binding without a Scheduled condition.
        return Decision(Verdict.SCHEDULE, "StatusNotRecorded")
    if status.get("schedulerObservedGeneration") != generation(binding):
        return Decision(Verdict.OBSERVE_GENERATION, "NoChange")
    return Decision(Verdict.NOTHING, "NoChange")
