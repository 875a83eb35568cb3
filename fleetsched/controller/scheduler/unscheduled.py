"""Bindings not scheduled now, by reason (issue 29), and the result label of Karmada's attempts.

``fleetsched_scheduler_unscheduled_bindings{reason}`` counts the bindings this replica schedules
(ours by schedulerName, not being deleted, owned when sharded) that are not scheduled now, by the
reason of their ``Scheduled=False`` condition, Karmada's binding reasons: ``NoClusterFit`` (no
cluster passes the filters), ``Unschedulable`` (the clusters that pass lack the replicas),
``QuotaExceeded`` (a FederatedResourceQuota refused the placement) and ``SchedulerError`` (anything
else: unreadable binding, budget exceeded, broken plugin, a failed write). A binding whose last
attempt failed before any condition could be written (a write the API server refused, a conflict
past the retries, a worker error) counts as ``SchedulerError`` until its next attempt ends.

It follows the binding caches (a listener keeps the bindings whose condition is Scheduled=False,
with the reason; a scrape counts those that are this replica's now), so every way a binding changes
feeds it: an attempt's write (the answer is cached), a binding that schedules later (its condition
turns True), one that is deleted (it leaves the cache), one whose condition another writer changed,
and a restart (the LIST brings the conditions back; NoClusterFit bindings are not retried by the
queue, so a count kept per attempt would lose them). A replica that does not lead
reports 0 for every reason, so summing the replicas of a leader-elected or sharded scheduler counts
each binding once. Every reason is reported, at 0 when no binding has it, so the alerts see the
series from the first scrape.

``attempt_result`` is the ``result`` label of ``karmada_scheduler_schedule_attempts_total`` and
``karmada_scheduler_e2e_scheduling_duration_seconds`` as karmada-scheduler gives it
(``pkg/scheduler/metrics/metrics.go``: "scheduled" when ``scheduleResourceBinding`` returns no error,
else "error"): Karmada's ``getConditionByError`` (``pkg/scheduler/helper.go``) drops the error of a
lone FitError after writing its condition, so a NoClusterFit attempt counts "scheduled"; an
Unschedulable, SchedulerError or QuotaExceeded attempt counts "error". The attempts counter keeps
Karmada's meaning; the gauge above says which bindings no cluster fits.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Iterator, Mapping
from typing import Any

from prometheus_client.core import GaugeMetricFamily

from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.cache import object_key
from fleetsched.controller.runtime.queue import Outcome, QueueKey
from fleetsched.controller.scheduler import decision
from fleetsched.scheduler import ScheduleResult
from fleetsched.scheduler.errors import FitError, SchedulingError, UnschedulableError

NAME = "fleetsched_scheduler_unscheduled_bindings"
NO_CLUSTER_FIT = FitError.reason
UNSCHEDULABLE = UnschedulableError.reason
SCHEDULER_ERROR = SchedulingError.reason
QUOTA_EXCEEDED = "QuotaExceeded"  # Karmada's BindingReasonQuotaExceeded
REASONS = (NO_CLUSTER_FIT, UNSCHEDULABLE, QUOTA_EXCEEDED, SCHEDULER_ERROR)
SCHEDULED_CONDITION = "Scheduled"


def attempt_result(result: ScheduleResult) -> str:
    """Karmada's ``result`` label for an attempt that ended with ``result`` written."""
    condition = result.condition
    if condition is not None and (condition.status or condition.reason == NO_CLUSTER_FIT):
        return metrics.RESULT_SUCCESS
    return metrics.RESULT_ERROR


def not_scheduled_reason(obj: Mapping[str, Any]) -> str | None:
    """The reason of the binding's ``Scheduled=False`` condition (None: scheduled, or never tried)."""
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == SCHEDULED_CONDITION:
            if condition.get("status") == "False":
                return str(condition.get("reason") or SCHEDULER_ERROR)
            return None
    return None


class UnscheduledBindings:
    """The gauge's collector. ``watch`` points it at the scheduler operator (held weakly: the last
    one built in the process is reported, as the queue gauges do) and listens to its binding caches,
    keeping the bindings whose condition is Scheduled=False with its reason (a scrape reads those,
    not every binding); ``attempted`` hears every outcome of a worker."""

    def __init__(self) -> None:
        self._operator: weakref.ref[Any] | None = None
        # (kind, cache key) -> the reason of its Scheduled=False condition and its uid, as cached
        # now, for the bindings of this scheduler's names that are not being deleted
        self.reasons: dict[tuple[str, str], tuple[str, str | None]] = {}
        # bindings whose last attempt ended in an error, whatever their condition says
        self.failed: dict[QueueKey, None] = {}

    def watch(self, operator: Any) -> None:
        self._operator = weakref.ref(operator)
        # new maps: the listeners left on an earlier operator's caches fill the old one
        self.reasons = {}
        self.failed = {}
        names = operator.config.scheduler_names
        for kind, cache in operator.bindings.items():
            listener = _Reasons(kind, self.reasons, names)
            cache.listeners.append(listener)
            for obj in cache:
                listener.upsert(object_key(obj), obj)

    def attempted(self, key: Hashable, outcome: Outcome) -> None:
        if not isinstance(key, QueueKey):
            return
        if outcome is Outcome.ERROR:
            self.failed[key] = None
        else:
            self.failed.pop(key, None)

    def counts(self) -> dict[str, int]:
        """Bindings not scheduled now, by reason (every reason, 0 included)."""
        counts = dict.fromkeys(REASONS, 0)
        operator = self._operator() if self._operator is not None else None
        if operator is None:
            return counts
        runtime = operator.runtime
        if not runtime.is_leader:
            return counts
        ours = _Ours(runtime, operator.config.scheduler_names)
        owns = None if runtime.sharding is None else runtime.owns  # not sharded: every binding
        for reason, uid in list(self.reasons.values()):
            if owns is None or owns(uid):
                counts[reason] = counts.get(reason, 0) + 1
        for queued in list(self.failed):
            cache = operator.bindings.get(queued.kind)
            obj = None if cache is None else cache.get(queued.object_key)
            if obj is None:
                self.failed.pop(queued, None)  # deleted: it leaves the gauge
            elif (queued.kind, queued.object_key) not in self.reasons and ours(obj):
                counts[SCHEDULER_ERROR] += 1
        return counts

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            NAME,
            "Bindings this scheduler replica schedules that are not scheduled now, by the reason of "
            "their Scheduled=False condition (NoClusterFit, Unschedulable, QuotaExceeded, "
            "SchedulerError; SchedulerError too when the last attempt failed before writing one).",
            labels=["reason"],
        )
        for reason, count in self.counts().items():
            family.add_metric([reason], count)
        yield family


class _Reasons:
    """A binding cache's listener: the Scheduled=False reasons of one kind's bindings that are ours
    (by schedulerName, not suspended, labelled by a policy controller) and not being deleted."""

    def __init__(self, kind: str, reasons: dict[tuple[str, str], tuple[str, str | None]],
                 names: Any) -> None:
        self.kind = kind
        self.reasons = reasons
        self.names = names

    def upsert(self, key: str, obj: Mapping[str, Any]) -> None:
        reason = not_scheduled_reason(obj)
        meta = obj.get("metadata") or {}
        if reason is None or meta.get("deletionTimestamp") or not decision.passes_filter(obj, self.names):
            self.reasons.pop((self.kind, key), None)
        else:
            self.reasons[(self.kind, key)] = (reason, meta.get("uid") or None)

    def delete(self, key: str) -> None:
        self.reasons.pop((self.kind, key), None)


class _Ours:
    """Whether a cached binding is this replica's to schedule now."""

    def __init__(self, runtime: Any, names: Any) -> None:
        self.runtime = runtime
        self.names = names

    def __call__(self, obj: Mapping[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        if meta.get("deletionTimestamp") or not decision.passes_filter(obj, self.names):
            return False
        return bool(self.runtime.owns(meta.get("uid") or None))


COLLECTOR = UnscheduledBindings()
metrics.REGISTRY.register(COLLECTOR)  # type: ignore[arg-type]
