"""When the operator schedules a binding, and which watch events are worth queueing.

Pure functions reproducing karmada-scheduler; the event filters read the JSON form (they run on
every watch event), the scheduling decision reads the binding converted once by the core's own
converter (``read_binding``) and applies the core's own rules (workload, duplicated, reschedule
times parsed by ``scheduler.convert``):

* ``passes_filter`` — the binding event filter (karmada-scheduler's ``resourceBindingEventFilter``);
* ``binding_update_enqueues`` / ``cluster_update_reconciles`` / ``cluster_matches_binding`` — which
  update events enqueue which bindings (§3.1);
* ``should_schedule`` — the ordered checks of §3.4 deciding whether a dequeued binding gets a
  scheduling attempt, only its observed generation patched, or nothing.

A binding is never rescheduled because of the operator's own writes: the status write leaves the
generation alone, and the spec write's new generation is recorded by the caller so its watch
event is not mistaken for a user change (``binding_update_enqueues(..., own_generation=...)``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from fleetsched.controller.scheduler.placement_json import placement_changed
from fleetsched.scheduler.convert import binding_from_dict, status_from_dict
from fleetsched.scheduler.framework.hints import ClusterEvent
from fleetsched.scheduler.groups import reschedule_required
from fleetsched.scheduler.types import DIVIDED, DUPLICATED, BindingStatus, SchedulingBinding

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


# Why the event filter passes a binding by (the ``reason`` of fleetsched_scheduler_bindings_skipped_total).
SKIP_OTHER_SCHEDULER = "other-scheduler"
SKIP_SUSPENDED = "suspended"
SKIP_NO_PERMANENT_ID = "no-permanent-id"  # no policy controller (or no webhook) labelled it
# reason -> (log level, why) of the scheduler's one binding_skipped line per binding and reason. A
# missing permanent-id is a warning: nothing else says that the webhook or policy controller did not
# run. Another scheduler's binding is common beside Karmada's scheduler, so not at info.
SKIP_LOGGING: Mapping[str, tuple[str, str]] = {
    SKIP_NO_PERMANENT_ID: ("warning", "no permanent-id label: was the policy admitted by the webhook "
                                      "and the binding made by a policy controller?"),
    SKIP_SUSPENDED: ("info", "spec.suspension.scheduling is true"),
    SKIP_OTHER_SCHEDULER: ("debug", "spec.schedulerName is not one of this scheduler's profiles"),
}


def skip_reason(binding: Obj, scheduler_names: str | Collection[str]) -> str | None:
    """Why the binding event filter passes this binding by, or None when it is ours to schedule."""
    served = (scheduler_names,) if isinstance(scheduler_names, str) else scheduler_names
    if effective_scheduler_name(binding) not in served:
        return SKIP_OTHER_SCHEDULER
    if scheduling_suspended(binding):
        return SKIP_SUSPENDED
    labels = _meta(binding).get("labels") or {}
    if not any(labels.get(label) for label in PERMANENT_ID_LABELS):
        return SKIP_NO_PERMANENT_ID
    return None


def passes_filter(binding: Obj, scheduler_names: str | Collection[str]) -> bool:
    """The binding event filter: ours (a profile serves its schedulerName), not suspended, and
    created by a policy controller."""
    return skip_reason(binding, scheduler_names) is None


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


def cluster_reads_changed(old: Obj, new: Obj) -> bool:
    """Whether a Cluster update changed anything a plugin or estimator reads (labels, spec, the
    resource summary, the API enablements, deletion): the queueing hints look no further otherwise,
    so a heartbeat that only moves conditions or timestamps costs these comparisons."""
    old_meta, new_meta = _meta(old), _meta(new)
    if old_meta.get("labels") != new_meta.get("labels"):
        return True
    if old_meta.get("deletionTimestamp") != new_meta.get("deletionTimestamp"):
        return True
    if _spec(old) != _spec(new):
        return True
    old_status, new_status = _status(old), _status(new)
    return old_status.get("resourceSummary") != new_status.get("resourceSummary") or (
        old_status.get("apiEnablements") != new_status.get("apiEnablements")
    )


def _targets(binding: Obj | None) -> dict[str, int]:
    if binding is None:
        return {}
    out: dict[str, int] = {}
    for target in _spec(binding).get("clusters") or ():
        if isinstance(target, Mapping) and isinstance(target.get("name"), str):
            out[target["name"]] = int(target.get("replicas") or 0)
    return out


def binding_freed(old: Obj, new: Obj | None) -> list[tuple[ClusterEvent, str]]:
    """The room a binding change gave back, per cluster (queueing hints): every target of a deleted
    binding; a target dropped (rescheduled) or with fewer replicas (scaled down) on an update."""
    before, after = _targets(old), _targets(new)
    if new is None:
        return [(ClusterEvent.BINDING_DELETED, name) for name in before]
    freed: list[tuple[ClusterEvent, str]] = []
    for name, replicas in before.items():
        if name not in after:
            freed.append((ClusterEvent.BINDING_RESCHEDULED, name))
        elif after[name] < replicas:
            freed.append((ClusterEvent.BINDING_SCALED_DOWN, name))
    return freed


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


def replicas_changed(binding: SchedulingBinding) -> bool:
    """Karmada's IsBindingReplicasChanged: the targets no longer add up to ``spec.replicas``."""
    replica_scheduling = binding.placement.replica_scheduling if binding.placement is not None else None
    if replica_scheduling is None:
        return False
    if replica_scheduling.scheduling_type == DUPLICATED:
        return any(t.replicas != binding.replicas for t in binding.clusters)
    if replica_scheduling.scheduling_type == DIVIDED:
        return sum(t.replicas for t in binding.clusters) != binding.replicas
    return False


@dataclass(frozen=True, slots=True)
class BindingRead:
    """A binding converted once: the core's typed values, and the few edge fields (metadata and
    status bookkeeping, the placement as written) that the §3.4 checks read beside them."""

    binding: SchedulingBinding
    status: BindingStatus
    generation: int
    observed_generation: Any  # status.schedulerObservedGeneration as stored; None when absent
    scheduled_recorded: bool  # status.conditions holds a Scheduled condition
    placement_json: dict[str, Any] | None  # spec.placement as written (compared as Go would)
    applied_placement: str | None  # the policy.karmada.io/applied-placement annotation


def read_binding(obj: Obj) -> BindingRead:
    """Convert ``obj`` with the core's converter; raises ``ConversionError`` naming the field."""
    spec, status = _spec(obj), _status(obj)
    return BindingRead(
        binding=binding_from_dict(obj),
        status=status_from_dict(obj),
        generation=generation(obj),
        observed_generation=status.get("schedulerObservedGeneration"),
        scheduled_recorded=any(c.get("type") == "Scheduled" for c in status.get("conditions") or ()),
        placement_json=spec.get("placement"),
        applied_placement=(_meta(obj).get("annotations") or {}).get(APPLIED_PLACEMENT_ANNOTATION),
    )


# The reason of a decision taken on a binding the core's converter cannot read.
UNREADABLE = "Unreadable"
# A scale: counted under schedule_type "ScaleSchedule" in the metrics.
REPLICAS_CHANGED = "ReplicasChanged"


class Verdict(enum.Enum):
    SCHEDULE = "schedule"
    OBSERVE_GENERATION = "observe-generation"  # only patch status.schedulerObservedGeneration
    NOTHING = "nothing"


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    reason: str  # why (a stable word for logs and metrics)


def should_schedule(binding: BindingRead | Obj, terminating_clusters: Collection[str]) -> Decision:
    """The §3.4 checks in order, with the core's own rules on typed values; the first that holds
    triggers a scheduling attempt. A JSON binding is converted first (``ConversionError``)."""
    read = binding if isinstance(binding, BindingRead) else read_binding(binding)
    typed, status = read.binding, read.status
    observed_name = status.scheduler_observing_affinity_name
    if placement_changed(read.placement_json, read.applied_placement, observed_name):
        return Decision(Verdict.SCHEDULE, "PlacementChanged")
    if replicas_changed(typed):
        return Decision(Verdict.SCHEDULE, REPLICAS_CHANGED)
    if reschedule_required(typed.reschedule_triggered_at, status.last_scheduled_time):
        return Decision(Verdict.SCHEDULE, "RescheduleTriggered")
    if not typed.is_workload() or typed.placement is None or typed.placement.is_duplicated():
        return Decision(Verdict.SCHEDULE, "AlwaysSchedule")
    if any(t.name in terminating_clusters for t in typed.clusters):
        return Decision(Verdict.SCHEDULE, "TargetClusterTerminating")
    if not read.scheduled_recorded:
        # The result was written but its status never was (a crash or a failed status write
        # between the two writes): running again gives the same result, so only the status is
        # written. Karmada would leave such a binding without a Scheduled condition.
        return Decision(Verdict.SCHEDULE, "StatusNotRecorded")
    if read.observed_generation != read.generation:
        return Decision(Verdict.OBSERVE_GENERATION, "NoChange")
    return Decision(Verdict.NOTHING, "NoChange")
