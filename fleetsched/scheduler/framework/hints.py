"""Queueing hints (kube-scheduler's QueueingHints, KEP-4247): which event can help a binding that failed.

A binding that failed as Unschedulable waits in the queue's unschedulable set. Instead of waiting
for the five-minute flush, it goes back (through backoff) as soon as an event arrives that can
change the answer of a plugin that rejected it, and only then:

* ``rejections_of(result)`` reads who rejected what from the core's own result: each filter
  plugin (or extender) with the clusters it rejected, and the replica estimators (``ESTIMATOR``)
  with the clusters that passed the filters but had too little room; the edge adds the assume
  record (``ASSUME_RECORD``) under gate SchedulingOvercommitProtection.
* A plugin declares the events that can change its answer and, per event, a hint function
  answering ``QUEUE`` or ``SKIP`` (``EnqueueExtensions.events_to_register``). A plugin that does
  not implement it is interested in every event (kube-scheduler's rule for a plugin without
  EventsToRegister); one that returns ``()`` is helped by no event (only the flush retries it).
* ``cluster_events(old, new)`` is what a Cluster change amounts to, from the plain cluster views:
  added, allocatable up, allocated or allocating down, a taint removed, labels or fields changed,
  an API enablement added. A heartbeat that changes none of these is no event at all.
* ``requeue_hint(rejections, event, registrations)``: QUEUE when some rejecting plugin registered
  the event and its hint says QUEUE (or it has no hint); a binding whose rejectors are unknown is
  requeued by any event.

Pure: hint functions get the rejection and the event (plain ``ClusterInfo`` views), never a client.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from fleetsched.scheduler.errors import FitError, UnschedulableError
from fleetsched.scheduler.outcome import ScheduleResult
from fleetsched.scheduler.types import ClusterInfo, Quantity

__all__ = [
    "ASSUME_RECORD",
    "ESTIMATOR",
    "ClusterEvent",
    "ClusterEventWithHint",
    "EnqueueExtensions",
    "HintFn",
    "QueueEvent",
    "QueueingHint",
    "Rejection",
    "cluster_events",
    "queue_if_rejected_here",
    "registrations_of",
    "rejections_of",
    "requeue_hint",
]

# The rejectors that are not plugins of a profile: the replica estimators (too little room on the
# clusters that passed the filters) and the assume record (room held by decisions in flight).
ESTIMATOR = "ReplicaEstimator"
ASSUME_RECORD = "AssumeRecord"


class ClusterEvent(enum.Flag):
    """What happened, as far as a rejected binding cares. One ``QueueEvent`` carries one of these."""

    NONE = 0
    CLUSTER_ADDED = enum.auto()
    ALLOCATABLE_UP = enum.auto()  # some resource's status.resourceSummary.allocatable grew
    ALLOCATED_DOWN = enum.auto()  # some resource's allocated or allocating shrank
    TAINT_REMOVED = enum.auto()
    LABELS_CHANGED = enum.auto()
    FIELDS_CHANGED = enum.auto()  # provider, region, zone(s)
    API_ENABLEMENT_ADDED = enum.auto()
    BINDING_DELETED = enum.auto()  # a scheduled binding left the cluster
    BINDING_SCALED_DOWN = enum.auto()  # fewer replicas of a binding on the cluster
    BINDING_RESCHEDULED = enum.auto()  # a binding moved off the cluster
    ASSUMPTION_RELEASED = enum.auto()  # the assume record gave room back (released or expired)

    @property
    def label(self) -> str:
        """The metric label of a single event (``ClusterAdded``, ``AllocatableUp``, ...)."""
        return "".join(part.capitalize() for part in (self.name or "none").split("_"))


ALL_EVENTS = ClusterEvent(sum(e.value for e in ClusterEvent))


class QueueingHint(enum.Enum):
    QUEUE = "Queue"
    SKIP = "Skip"


@dataclass(frozen=True, slots=True)
class QueueEvent:
    """One event on one cluster. ``old``/``new`` are the cluster's views before and after (a Cluster
    event; ``old`` is None when added); both None for binding and assumption events."""

    kind: ClusterEvent
    cluster: str
    old: ClusterInfo | None = None
    new: ClusterInfo | None = None


@dataclass(frozen=True, slots=True)
class Rejection:
    """One rejector of a failed attempt and the clusters it rejected (for ``ESTIMATOR`` and
    ``ASSUME_RECORD``: the clusters that passed the filters and were short of room)."""

    plugin: str
    clusters: frozenset[str]


HintFn = Callable[[Rejection, QueueEvent], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """Events that may change a plugin's answer, and the function deciding whether one does for a
    given rejection (None: every such event does)."""

    events: ClusterEvent
    hint: HintFn | None = None


@runtime_checkable
class EnqueueExtensions(Protocol):
    """A plugin that says which events can make a binding it rejected schedulable."""

    def events_to_register(self) -> Sequence[ClusterEventWithHint]: ...


def queue_if_rejected_here(rejection: Rejection, event: QueueEvent) -> QueueingHint:
    """The common hint: an added cluster, or a change on a cluster this rejector rejected."""
    if event.kind is ClusterEvent.CLUSTER_ADDED or event.cluster in rejection.clusters:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


_ROOM = ClusterEvent.CLUSTER_ADDED | ClusterEvent.ALLOCATABLE_UP | ClusterEvent.ALLOCATED_DOWN
_RELEASES = (
    ClusterEvent.ASSUMPTION_RELEASED
    | ClusterEvent.BINDING_DELETED
    | ClusterEvent.BINDING_SCALED_DOWN
    | ClusterEvent.BINDING_RESCHEDULED
)
# The built-in rejectors' registrations: room on a cluster that was short of it. Under the gate the
# estimators' answer also counts the assumptions, so a release helps them too.
BUILT_IN: Mapping[str, tuple[ClusterEventWithHint, ...]] = {
    ESTIMATOR: (ClusterEventWithHint(_ROOM | ClusterEvent.ASSUMPTION_RELEASED, queue_if_rejected_here),),
    ASSUME_RECORD: (ClusterEventWithHint(_RELEASES | _ROOM, queue_if_rejected_here),),
}


def registrations_of(plugin: object) -> tuple[ClusterEventWithHint, ...] | None:
    """A plugin's declared registrations; None when it declares none (interested in every event).
    A declaration that raises or is malformed counts as none: the binding is then requeued by
    any event, never lost."""
    declare = getattr(plugin, "events_to_register", None)
    if not callable(declare):
        return None
    try:
        found = tuple(declare())
    except Exception:  # a plugin's bug must not stop requeueing; every event counts then
        return None
    if not all(isinstance(r, ClusterEventWithHint) for r in found):
        return None
    return found


Registrations = Callable[[str], Sequence[ClusterEventWithHint] | None]


def requeue_hint(
    rejections: Sequence[Rejection], event: QueueEvent, registrations: Registrations
) -> QueueingHint:
    """Whether ``event`` can help a binding rejected by ``rejections`` (empty: rejectors unknown)."""
    if not rejections:
        return QueueingHint.QUEUE
    for rejection in rejections:
        registered = BUILT_IN.get(rejection.plugin)
        if registered is None:
            registered = registrations(rejection.plugin)
        if registered is None:
            return QueueingHint.QUEUE  # no EventsToRegister: every event may help
        for entry in registered:
            if not (entry.events & event.kind):
                continue
            if entry.hint is None:
                return QueueingHint.QUEUE
            try:
                answer = entry.hint(rejection, event)
            except Exception:  # a failing hint is taken as QUEUE, as kube-scheduler does
                return QueueingHint.QUEUE
            if answer is not QueueingHint.SKIP:
                return QueueingHint.QUEUE
    return QueueingHint.SKIP


def rejections_of(result: ScheduleResult) -> tuple[Rejection, ...]:
    """Who rejected which clusters in a failed (Unschedulable or NoClusterFit) result, over its
    affinity terms; () when the result does not say (the binding is then requeued by any event)."""
    by_plugin: dict[str, set[str]] = {}
    for attempt in result.attempts:
        if attempt.error_reason not in (UnschedulableError.reason, FitError.reason):
            continue
        verdicts = attempt.verdicts
        if not verdicts:
            return ()
        short: set[str] = set()
        for verdict in verdicts:
            if verdict.feasible:
                short.add(verdict.cluster)
            elif verdict.plugin:
                by_plugin.setdefault(verdict.plugin, set()).add(verdict.cluster)
            # a cluster being deleted: no event brings it back
        if attempt.error_reason == UnschedulableError.reason:
            by_plugin.setdefault(ESTIMATOR, set()).update(short)
    return tuple(Rejection(plugin, frozenset(clusters)) for plugin, clusters in sorted(by_plugin.items()))


def _grew(old: Mapping[str, Quantity], new: Mapping[str, Quantity]) -> bool:
    """Some resource of ``new`` is more than in ``old`` (absent counts as zero)."""
    for name, value in new.items():
        before = old.get(name)
        if value.value_exact > (before.value_exact if before is not None else 0):
            return True
    return False


def cluster_events(old: ClusterInfo | None, new: ClusterInfo) -> ClusterEvent:
    """What changed between two views of a cluster that a plugin or estimator reads."""
    if old is None:
        return ClusterEvent.CLUSTER_ADDED
    kinds = ClusterEvent.NONE
    if old.labels != new.labels:
        kinds |= ClusterEvent.LABELS_CHANGED
    if (old.provider, old.region, old.zones) != (new.provider, new.region, new.zones):
        kinds |= ClusterEvent.FIELDS_CHANGED
    if any(t not in new.taints for t in old.taints):
        kinds |= ClusterEvent.TAINT_REMOVED
    if new.api_enablements - old.api_enablements:
        kinds |= ClusterEvent.API_ENABLEMENT_ADDED
    before, after = old.resource_summary, new.resource_summary
    if after is not None:
        if before is None or _grew(before.allocatable, after.allocatable):
            kinds |= ClusterEvent.ALLOCATABLE_UP
        if before is not None and (
            _grew(after.allocated, before.allocated) or _grew(after.allocating, before.allocating)
        ):
            kinds |= ClusterEvent.ALLOCATED_DOWN
        if before is not None and before.allocatable_modelings != after.allocatable_modelings:
            kinds |= ClusterEvent.ALLOCATABLE_UP  # the modelled room moved: let the estimators judge
    if old.resource_models != new.resource_models:
        kinds |= ClusterEvent.ALLOCATABLE_UP
    return kinds


def split(kinds: ClusterEvent) -> Iterable[ClusterEvent]:
    """The single events of a combination, in declaration order."""
    return (e for e in ClusterEvent if e.value and e in kinds and bin(e.value).count("1") == 1)
