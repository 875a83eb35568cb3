"""One binding taken from the queue (kube-scheduler's ``schedule_one.go``).

The scheduling cycle: §3.4's decision whether the binding gets an attempt (``decision.py``), the
core of its profile on the current cluster snapshot (with its peers and the assume record's
assumptions laid over) in a core thread within the per-binding budget (``compute.py``), and the
decision assumed in the assume record before anything is written; then the binding cycle
(``binding_cycle.py``), the report, and how the queue treats the key next (§3.5). A pending move
(``moves.py``) goes on without the core.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.controller import ControllerRuntime
from fleetsched.controller.runtime.queue import Outcome, QueuedBinding, QueueKey, SchedulingQueue
from fleetsched.controller.scheduler import decision, moves, reporting
from fleetsched.controller.scheduler.assume import Assumption, Record
from fleetsched.controller.scheduler.assume.ledger import DecisionTooLarge
from fleetsched.controller.scheduler.binding_cycle import MAX_CONFLICT_RETRIES, Binder
from fleetsched.controller.scheduler.compute import BudgetExceeded, CoreExecutor, Profiles
from fleetsched.controller.scheduler.peers import NoPeers, Peers
from fleetsched.controller.scheduler.reporting import Reporter
from fleetsched.controller.scheduler.store import BindingStore, queue_key
from fleetsched.controller.scheduler.writer import compute_patches
from fleetsched.kube.client import ApiError
from fleetsched.scheduler import ScheduleResult
from fleetsched.scheduler.convert import ConversionError
from fleetsched.scheduler.errors import FitError, SchedulingError, UnschedulableError
from fleetsched.scheduler.framework import hints
from fleetsched.scheduler.groups import reschedule_required
from fleetsched.scheduler.outcome import Condition
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.stepping import MoveBudget

log = structlog.get_logger("fleetsched.scheduler")

# Decisions of one binding the assume record refused (another decision took the capacity first)
# before the binding goes back to the queue with backoff.
MAX_ASSUME_ATTEMPTS = 3
SCHEDULER_ERROR = SchedulingError.reason


class AssumeConflict(Exception):
    """Every decision of a binding was refused by the assume record: concurrent decisions took the
    capacity."""


@dataclass(frozen=True, slots=True)
class _Attempt:
    """What ``_decide`` hands to the attempt: why, and the binding as read (or why unreadable)."""

    decision: decision.Decision
    read: decision.BindingRead | ConversionError


@dataclass(frozen=True, slots=True)
class _Decided:
    """The core's result, whether it ran past its budget, and what the assume record took for it."""

    result: ScheduleResult
    over_budget: bool
    assumption: Assumption


def _every_event(plugin: str) -> None:
    """Registrations of a core without a framework: none declared, so every event may help."""
    return None


def queue_outcome(result: ScheduleResult, *, over_budget: bool) -> Outcome:
    """How the queue treats a key after an attempt (§3.5), from the error class behind the reason."""
    assert result.condition is not None
    if over_budget:
        return Outcome.ERROR
    reason = result.condition.reason
    if result.condition.status or reason == FitError.reason:
        return Outcome.DONE  # a FitError is not retried from the queue (§3.5)
    if reason == UnschedulableError.reason:
        return Outcome.UNSCHEDULABLE
    if reason == SchedulingError.reason and result.attempts == ():
        return Outcome.DONE  # unreadable binding: only a change to it can help
    return Outcome.ERROR


def _failed(key: str, message: str) -> ScheduleResult:
    return ScheduleResult(key, Condition(False, SCHEDULER_ERROR, message), None, None, False)


@dataclass
class SchedulingCycle:
    store: BindingStore
    queue: SchedulingQueue
    runtime: ControllerRuntime
    compute: CoreExecutor
    profiles: Profiles
    assumptions: Record
    binder: Binder
    report: Reporter
    polls: moves.Polls
    scheduler_names: frozenset[str]
    sharded: bool = False
    peers: Peers = dataclasses.field(default_factory=NoPeers)
    move_budget: MoveBudget | None = None

    async def process(self, entry: QueuedBinding) -> Outcome:
        """One key from the queue, decided again from a fresh read after a 409 Conflict."""
        assert isinstance(entry.key, QueueKey)
        kind, key = entry.key.kind, entry.key.object_key
        for attempt in range(MAX_CONFLICT_RETRIES):
            obj = self.store.get(kind, key)
            if obj is None:
                return Outcome.DONE
            if attempt and self.sharded:
                self.runtime.ensure_leader()  # after a 409: re-decide only if still owned (else dropped)
            try:
                return await self._schedule_one(kind, key, obj)
            except ApiError as exc:
                if exc.is_not_found:
                    self.store.bindings[kind].delete(key)
                    return Outcome.DONE
                if not exc.is_conflict:
                    log.warning("binding_write_failed", binding=key, kind=kind, error=str(exc))
                    return Outcome.ERROR
                reporting.conflict()
                log.info("binding_write_conflict", binding=key, kind=kind)
                await self.store.refresh(self.binder.client, kind, key)
        return Outcome.ERROR

    async def _schedule_one(self, kind: str, key: str, obj: dict[str, Any]) -> Outcome:
        """One pass over a cached binding: decide, compute, assume, bind, report."""
        attempt = self._decide(kind, key, obj)
        if self._move_goes_on(obj, attempt):
            return await self._move_step(kind, key, obj)
        if isinstance(attempt, Outcome):
            return attempt
        if attempt.decision.verdict is decision.Verdict.OBSERVE_GENERATION:
            await self.binder.write_observed_generation(kind, key, obj)
            return Outcome.DONE
        started = time.perf_counter()
        try:
            decided = await self._attempt(key, obj, attempt.read)
        except AssumeConflict:
            log.info("binding_reserve_conflict", binding=key, kind=kind, attempts=MAX_ASSUME_ATTEMPTS)
            return Outcome.ERROR  # back with backoff; nothing written
        fresh = isinstance(attempt.read, decision.BindingRead) and reschedule_required(
            attempt.read.binding.reschedule_triggered_at, attempt.read.status.last_scheduled_time)
        bound = await self.binder.bind(kind, key, obj, decided.result, decided.assumption, fresh=fresh)
        if bound is None:
            return Outcome.ERROR
        self.report.scheduled(kind, key, obj, bound.rendered, bound.result, attempt.decision, bound.patches,
                              started=started)
        self._after_move(kind, key, obj, bound.step, bound.warning)
        outcome = queue_outcome(bound.result, over_budget=decided.over_budget)
        if outcome is Outcome.UNSCHEDULABLE:
            self._note_rejection(kind, key, obj, bound.result)
        return outcome

    def _decide(self, kind: str, key: str, obj: dict[str, Any]) -> Outcome | _Attempt:
        """§3.4: an Outcome when there is nothing to schedule, else what the attempt starts from."""
        if not decision.passes_filter(obj, self.scheduler_names):
            return Outcome.DONE
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            self.report.deleting(kind, key, obj)
            return Outcome.DONE
        if (obj.get("spec") or {}).get("placement") is None:
            log.warning("binding_without_placement", binding=key, kind=kind)
            return Outcome.ERROR
        try:
            read: decision.BindingRead | ConversionError = decision.read_binding(obj)
        except ConversionError as exc:
            # Unreadable: no rule can be applied to it; the attempt reports why.
            return _Attempt(decision.Decision(decision.Verdict.SCHEDULE, decision.UNREADABLE), exc)
        verdict = decision.should_schedule(read, self.store.clusters.terminating())
        if verdict.verdict is decision.Verdict.NOTHING:
            return Outcome.DONE
        return _Attempt(verdict, read)

    async def _attempt(
        self, key: str, obj: Mapping[str, Any], read: decision.BindingRead | ConversionError
    ) -> _Decided:
        """The core's result for the binding, whether it ran past its budget, and its footprint
        assumed in the assume record. Bad input and an exceeded budget become a SchedulerError
        result, reported like any other. A decision the record refuses (a cluster it needs changed
        meanwhile and no longer holds it) is made again against the record as it is now
        (``AssumeConflict`` after ``MAX_ASSUME_ATTEMPTS``)."""
        nothing = Assumption(key)
        if isinstance(read, ConversionError):
            # Bad input: report it on the binding and keep serving the others; a spec change retries.
            return _Decided(_failed(key, str(read)), False, nothing)
        scheduler_name = decision.effective_scheduler_name(obj)
        for _ in range(MAX_ASSUME_ATTEMPTS):
            version = self.assumptions.version
            peer_version = self.peers.version
            try:
                result, snapshot = await self._compute(key, read, scheduler_name)
            except BudgetExceeded as exc:
                # Reported like any scheduler error (condition, Event), then retried with backoff.
                return _Decided(_failed(key, str(exc)), True, nothing)
            if not result.scheduled or result.clusters is None:
                return _Decided(self.assumptions.shortfall(result, snapshot.names), False, nothing)
            if self.peers.changed_since(read.binding, peer_version):
                metrics.RESERVE_REDECISIONS.inc()  # a peer of its groups moved meanwhile
                continue
            try:
                assumption = await self.assumptions.assume(
                    key, obj, read.binding, result, scheduler=self.profiles.scheduler_for(scheduler_name),
                    snapshot=self.store.clusters.snapshot(), version=version,
                )
            except DecisionTooLarge as exc:  # never fits the ledger: said on the binding, not retried
                return _Decided(_failed(key, str(exc)), False, nothing)
            if assumption is None:
                metrics.RESERVE_REDECISIONS.inc()
                continue
            self.peers.place(read.binding, (t.name for t in result.clusters))
            return _Decided(result, False, assumption)
        raise AssumeConflict(key)

    async def _compute(
        self, key: str, read: decision.BindingRead, scheduler_name: str
    ) -> tuple[ScheduleResult, Snapshot]:
        """The core of the binding's profile on the current cluster snapshot, in a core thread
        within the budget (``BudgetExceeded`` past it), or first on the loop for a slice when the
        profile only computes (``Scheduler.computes_only``), with the snapshot it ran against (the
        clusters carrying their assumptions under SchedulingOvercommitProtection). The one step that
        computes; everything around it is I/O."""
        snapshot = self.assumptions.overlay(self.peers.overlay(self.store.clusters.snapshot()))
        scheduler = self.profiles.scheduler_for(scheduler_name)
        result = await self.compute.run(
            scheduler.schedule, read.binding, read.status, snapshot, key=key, inline=scheduler.computes_only,
            pool=scheduler_name,  # a profile's stuck threads never take another's (compute.py)
        )
        return result, snapshot

    def _note_rejection(self, kind: str, key: str, obj: Mapping[str, Any], result: ScheduleResult) -> None:
        """Queueing hints: who rejected which clusters, kept with the binding while it waits as
        unschedulable, and the events its profile's plugins registered for them."""
        rejections = self.assumptions.rejections(hints.rejections_of(result))
        scheduler = self.profiles.scheduler_for(decision.effective_scheduler_name(obj))
        framework = getattr(scheduler, "framework", None)
        registrations = getattr(framework, "events_to_register", None) or _every_event
        hint = functools.partial(hints.requeue_hint, rejections, registrations=registrations)
        self.queue.note_rejection(queue_key(kind, key), hint)

    # ---- moves within a budget (moves.py) -------------------------------------------------------

    def _move_goes_on(self, obj: Mapping[str, Any], attempt: Outcome | _Attempt) -> bool:
        """A pending move goes on without the core (nothing else to decide, or only the replicas
        "changed" by the step written)."""
        if moves.TARGET_ANNOTATION not in ((obj.get("metadata") or {}).get("annotations") or {}):
            return False  # the common case, at the cost of one lookup
        if not decision.passes_filter(obj, self.scheduler_names):
            return False
        idle = attempt is Outcome.DONE or (
            isinstance(attempt, _Attempt) and attempt.decision.verdict is decision.Verdict.OBSERVE_GENERATION
        )
        replicas = isinstance(attempt, _Attempt) and attempt.decision.reason == decision.REPLICAS_CHANGED
        return moves.resumes(obj, nothing_else=idle, replicas_reason=replicas)

    async def _move_step(self, kind: str, key: str, obj: dict[str, Any]) -> Outcome:
        """The next step of a pending move, written with the generation it gives the binding."""
        step, warning = moves.going_on(obj, self.move_budget, dt.datetime.now(dt.UTC))
        patches = compute_patches(obj, step.rendered, explain=None)
        if patches.spec is not None:
            await self.binder.write(kind, key, obj, dataclasses.replace(patches, status=None), None)
        fresh = self.store.get(kind, key) or obj
        if int((fresh.get("status") or {}).get("schedulerObservedGeneration") or 0) != int(
            (fresh.get("metadata") or {}).get("generation") or 0
        ):
            await self.binder.write_observed_generation(kind, key, fresh)
        self._after_move(kind, key, obj, step, warning)
        return Outcome.DONE

    def _after_move(self, kind: str, key: str, obj: Mapping[str, Any], step: moves.Step,
                    warning: str | None) -> None:
        """The step's Event on the binding, and another look while the move is pending."""
        self.report.move_step(obj, step, warning)
        qkey = queue_key(kind, key)
        if step.pending:
            self.polls.again(qkey, lambda: self.queue.push(qkey, decision.binding_priority(obj)))
        elif self.polls.timers:
            self.polls.forget(qkey)
