"""What the scheduler says about its work: Events on the binding and its template, the attempt's
metrics and log lines, and the bindings the event filter passes by.

Events follow Karmada's (reasons ``ScheduleBindingSucceed`` / ``ScheduleBindingFailed``, one per
failed affinity group, on the binding and on its resource template); a move's step is said on the
binding only. Nothing here writes to the binding itself: that is the binding cycle's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.events import (
    NORMAL,
    REASON_FAILED,
    REASON_SUCCEED,
    WARNING,
    EventRecorder,
    InvolvedObject,
    group_failure_message,
    success_message,
)
from fleetsched.controller.runtime.queue import QueueKey
from fleetsched.controller.scheduler import decision, mistakes, moves, unscheduled
from fleetsched.controller.scheduler.store import RB
from fleetsched.controller.scheduler.writer import Patches
from fleetsched.scheduler import ScheduleResult
from fleetsched.scheduler.types import ClusterInfo

log = structlog.get_logger("fleetsched.scheduler")


@dataclass
class Reporter:
    # the runtime's recorder, once it runs (None before: nothing is said)
    events: Callable[[], EventRecorder | None]
    # why the event filter passes a binding by now: counted and logged once per binding and reason
    skipped: dict[QueueKey, str] = field(default_factory=dict)
    # the Clusters now, for the Warning Events that name a placement's mistakes (mistakes.py)
    clusters: Callable[[], Sequence[ClusterInfo]] = tuple

    def record(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        """An Event on the binding and on its resource template, as Karmada records them."""
        events = self.events()
        if events is None:
            return
        events.record(InvolvedObject.of_binding(obj), type_, reason, message)
        events.record(InvolvedObject.of_template(obj), type_, reason, message)

    def scheduled(
        self,
        kind: str,
        key: str,
        obj: Mapping[str, Any],
        rendered: Mapping[str, Any],
        result: ScheduleResult,
        verdict: decision.Decision,
        patches: Patches,
        *,
        started: float,
    ) -> None:
        """One attempt's Events, metrics and log line."""
        assert result.condition is not None
        self._outcome_events(kind, key, obj, rendered, result)
        elapsed = time.perf_counter() - started
        ok = result.condition.status
        label = unscheduled.attempt_result(result)  # Karmada's: a NoClusterFit attempt is "scheduled"
        scale = verdict.reason == decision.REPLICAS_CHANGED
        schedule_type = metrics.SCALE_SCHEDULE if scale else metrics.RECONCILE_SCHEDULE
        metrics.SCHEDULE_ATTEMPTS.labels(label, schedule_type).inc()
        metrics.E2E_SCHEDULING_DURATION.labels(label, schedule_type).observe(elapsed)
        clusters = (rendered.get("spec") or {}).get("clusters") or []
        log.info(
            "binding_scheduled" if ok else "binding_unschedulable",
            binding=key,
            kind=kind,
            why=verdict.reason,
            reason=result.condition.reason,
            clusters=len(clusters),
            affinity=result.affinity_name,
            spec_written=patches.spec is not None,
            status_written=patches.status is not None,
        )

    def _outcome_events(
        self, kind: str, key: str, obj: Mapping[str, Any], rendered: Mapping[str, Any], result: ScheduleResult
    ) -> None:
        if self.events() is None or result.condition is None:
            return
        terms = ((obj.get("spec") or {}).get("placement") or {}).get("clusterAffinities")
        if terms is not None:
            names = [t.get("affinityName") for t in terms]
            for attempt in result.attempts:
                if attempt.error and attempt.affinity_name in names:
                    index = names.index(attempt.affinity_name)
                    message = group_failure_message(kind, key, index, attempt.error)
                    self.record(obj, WARNING, REASON_FAILED, message)  # binding and template, as Karmada
        if result.condition.status:
            clusters = (rendered.get("spec") or {}).get("clusters") or []
            self.record(obj, NORMAL, REASON_SUCCEED, success_message(kind, clusters))
        else:
            self.record(obj, WARNING, REASON_FAILED, result.condition.message)
            mistakes.record_hints(self.events(), obj, self.clusters())

    def deleting(self, kind: str, key: str, obj: Mapping[str, Any]) -> None:
        """A binding being deleted is not scheduled (Karmada's Event)."""
        noun = "resourceBinding" if kind == RB else "clusterResourceBinding"
        self.record(obj, WARNING, REASON_FAILED, f"skip schedule deleting {noun}: {key}")

    def quota_exceeded(self, kind: str, key: str, obj: Mapping[str, Any], message: str) -> None:
        """A write refused with 403 QuotaExceeded: its log line, metric and Warning Event."""
        log.warning("binding_quota_exceeded", binding=key, kind=kind, message=message)
        metrics.SCHEDULE_ATTEMPTS.labels(metrics.RESULT_ERROR, metrics.RECONCILE_SCHEDULE).inc()
        self.record(obj, WARNING, REASON_FAILED, message)

    def move_step(self, obj: Mapping[str, Any], step: moves.Step, warning: str | None) -> None:
        """A move's step (and why its budget could not be read) on the binding."""
        events = self.events()
        if events is None:
            return
        if warning is not None:
            events.record(InvolvedObject.of_binding(obj), WARNING, REASON_FAILED, warning)
        if step.message is not None:
            events.record(InvolvedObject.of_binding(obj), NORMAL, moves.REASON_STEP, step.message)

    def passes_by(self, qkey: QueueKey, reason: str | None) -> bool:
        """Count and log a binding the event filter passes by, once per binding and reason (at the
        level decision.SKIP_LOGGING gives); True when the binding is ours to schedule."""
        if reason is None:
            self.skipped.pop(qkey, None)
            return True
        if self.skipped.get(qkey) != reason:
            self.skipped[qkey] = reason
            metrics.BINDINGS_SKIPPED.labels(reason).inc()
            level, why = decision.SKIP_LOGGING[reason]
            getattr(log, level)("binding_skipped", binding=f"{qkey.kind}/{qkey.namespace}/{qkey.name}",
                                reason=reason, why=why)
        return False

    def forget(self, qkey: QueueKey) -> None:
        self.skipped.pop(qkey, None)


def wrote(part: str, *, ok: bool) -> None:
    """One write of ``part`` (spec or status) answered, or failed with an answer (or none)."""
    metrics.API_WRITES.labels(part, "success" if ok else "error").inc()


def conflict() -> None:
    """A write answered 409 Conflict (it is tried again from a fresh read)."""
    metrics.WRITE_CONFLICTS.inc()
