"""The scheduler operator: watch events in, scheduling results out.

Data flow (design.md "Data flow in the operator"):

  watch events (bindings, Clusters; fleetsched.kube.watch) -> caches -> which keys to queue (decision.py)
  -> SchedulingQueue -> N workers: §3.4 decision, the pure core on the current cluster snapshot
  (in a core thread within the per-binding budget, compute.py; a profile that cannot wait on I/O
  starts on the event loop for a 5 ms slice first),
  the core's rendering -> at most two writes per binding (spec + annotations, then status),
  retried from a fresh read on 409 Conflict -> Events on the binding and its template.

Only the Lease holder's workers take keys from the queue; standbys keep their caches and queue
warm. In sharded mode (``--shard-mode=lease``, ``controller/runtime/shard.py``) every replica is active
and handles only the bindings it owns (rendezvous hashing of ``metadata.uid`` over the live
members): ownership is checked at push, at pop and before every write.

Watching writes nothing: no annotations, finalizers or peering objects on Karmada objects.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import functools
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import structlog

from fleetsched.api.names import (
    CLUSTER_GROUP,
    CLUSTER_RESOURCE_BINDING,
    CLUSTER_VERSION,
    RESOURCE_BINDING,
    WORK_GROUP,
    WORK_PLURALS,
    WORK_VERSION,
)
from fleetsched.api.names import binding_path_of_key as binding_path
from fleetsched.controller.runtime import controller as runtime
from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.cache import ClusterStore, ObjectCache, object_key, resource_version
from fleetsched.controller.runtime.controller import ControllerRuntime
from fleetsched.controller.runtime.controller import NotLeader as NotLeader  # raised by runtime.ensure_leader
from fleetsched.controller.runtime.controller import (
    NotOwner as NotOwner,  # raised by runtime.ensure_leader, sharded
)
from fleetsched.controller.runtime.events import (
    NORMAL,
    REASON_FAILED,
    REASON_SUCCEED,
    WARNING,
    InvolvedObject,
    group_failure_message,
    success_message,
)
from fleetsched.controller.runtime.leader import LeaderElectionConfig
from fleetsched.controller.runtime.queue import (
    SORT_BUDGET,
    Outcome,
    QueuedBinding,
    QueueKey,
    SchedulingQueue,
)
from fleetsched.controller.runtime.shard import MembershipChange, ShardConfig
from fleetsched.controller.scheduler import (
    assumptions,
    decision,
    listers,
    mistakes,
    moves,
    reserve,
    unscheduled,
)
from fleetsched.controller.scheduler.affected import AffectedBindings, affected_index
from fleetsched.controller.scheduler.compute import DEFAULT_BUDGET, BudgetExceeded, CoreExecutor
from fleetsched.controller.scheduler.ledger import DecisionTooLarge, Ledger
from fleetsched.controller.scheduler.peers import PeerIndex
from fleetsched.controller.scheduler.writer import (
    Patches,
    compute_patches,
    explanation,
    observed_generation_patch,
)
from fleetsched.kube import watch
from fleetsched.kube.client import ApiError, Connection, KubeClient
from fleetsched.scheduler import Scheduler, ScheduleResult, render_into_binding
from fleetsched.scheduler.assume import (
    DEFAULT_TTL,
    AssumeRecord,
    Reservation,
    name_shortfall,
)
from fleetsched.scheduler.convert import (
    ConversionError,
    cluster_from_dict,
)
from fleetsched.scheduler.errors import FitError, SchedulingError, UnschedulableError
from fleetsched.scheduler.framework import hints
from fleetsched.scheduler.framework.defaults import DEFAULT_QUEUE_SORT
from fleetsched.scheduler.framework.interface import Code, Status
from fleetsched.scheduler.framework.runtime import BindingCycle
from fleetsched.scheduler.groups import reschedule_required
from fleetsched.scheduler.outcome import Condition
from fleetsched.scheduler.stepping import MoveBudget
from fleetsched.scheduler.types import BindingStatus, SchedulingBinding

T = TypeVar("T")

log = structlog.get_logger("fleetsched.scheduler")

RB, CRB = RESOURCE_BINDING, CLUSTER_RESOURCE_BINDING
PLURALS = WORK_PLURALS
MAX_CONFLICT_RETRIES = 5
# Decisions of one binding refused at Reserve (another decision took the capacity first) before the
# binding goes back to the queue with backoff.
MAX_RESERVE_ATTEMPTS = 3
MAX_OWN_VERSIONS = 100_000


def queue_key(kind: str, key: str) -> QueueKey:
    """One queue for both kinds: the binding's kind, namespace ("" for a CRB) and name."""
    return QueueKey.of(kind, key)


def binding_uid(obj: Mapping[str, Any] | None) -> str | None:
    """What sharded mode divides bindings by: ``metadata.uid``."""
    if obj is None:
        return None
    return (obj.get("metadata") or {}).get("uid") or None


SCHEDULER_ERROR = SchedulingError.reason
# Karmada's BindingReasonQuotaExceeded, and the Status reason a FederatedResourceQuota's webhook gives.
QUOTA_EXCEEDED = "QuotaExceeded"


def is_quota_exceeded(exc: ApiError) -> bool:
    """A write refused because a quota is exceeded: 403 with reason QuotaExceeded (Karmada's check)."""
    return exc.status == 403 and exc.reason == QUOTA_EXCEEDED


def _every_event(plugin: str) -> None:
    """Registrations of a core without a framework: none declared, so every event may help."""
    return None


@dataclass(frozen=True, slots=True)
class _Attempt:
    """What ``_decide`` hands to the attempt: why, and the binding as read (or why unreadable)."""

    decision: decision.Decision
    read: decision.BindingRead | ConversionError


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


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    # One per profile; bindings of any other schedulerName are left alone.
    scheduler_names: frozenset[str] = frozenset({decision.DEFAULT_SCHEDULER_NAME})
    workers: int = 4
    leader_election: LeaderElectionConfig | None = None
    graceful_timeout: float = 20.0
    # --scheduling-timeout: one binding's budget in the core (None: unbounded)
    scheduling_timeout: float | None = DEFAULT_BUDGET
    # --shard-mode=lease: this replica's member Lease (exclusive with ``leader_election``)
    sharding: ShardConfig | None = None
    # gate SchedulingOvercommitProtection: the assume record, and --assumption-ttl (seconds)
    overcommit_protection: bool = False
    assumption_ttl: float = DEFAULT_TTL
    # ``moveBudget`` (issue 27, moves.py): None, Karmada's writes
    move_budget: MoveBudget | None = None
    # --binding-update-debounce (seconds): spec updates of one binding within it are scheduled once
    binding_update_debounce: float = 0.0


class ReserveConflict(Exception):
    """Every decision of a binding was refused at Reserve: concurrent decisions took the capacity."""


@dataclass
class SchedulerOperator:
    client: KubeClient
    connection: Connection
    scheduler: Scheduler
    config: OperatorConfig = field(default_factory=OperatorConfig)
    # the core's threads (one per worker) and budget; built from ``config`` when not given
    compute: CoreExecutor | None = None
    accurate: Any = None  # the accurate estimator client (connect/forget per Cluster), if enabled
    # schedulerName -> the Scheduler of that profile; a name absent here uses ``scheduler``.
    profiles: Mapping[str, Scheduler] = field(default_factory=dict)

    queue: SchedulingQueue = field(default_factory=SchedulingQueue)
    bindings: dict[str, ObjectCache] = field(
        default_factory=lambda: {RB: ObjectCache(AffectedBindings()), CRB: ObjectCache(AffectedBindings())}
    )
    clusters: ClusterStore = field(default_factory=ClusterStore)
    # generation our own spec patch gives a binding: its watch event is not a user change
    own_generation: dict[QueueKey, int] = field(default_factory=dict)
    # why the event filter passes a binding by now: counted and logged once per binding and reason
    skipped: dict[QueueKey, str] = field(default_factory=dict)
    # path -> (resourceVersion, items) of the initial sync's LISTs, handed to the watches once
    _listed: dict[str, tuple[str, list[dict[str, Any]]]] = field(default_factory=dict)
    # resourceVersions our own writes' answers carried (cached already): their watch events are skipped
    own_versions: dict[str, None] = field(default_factory=dict)
    _in_flight_background: set[asyncio.Future[Any]] = field(default_factory=set)
    # gate SchedulingOvercommitProtection: capacity decided but not yet in the clusters' status
    assumptions: AssumeRecord | None = None
    # gate WorkloadAffinity: the ResourceBindings with an affinity group and their targets
    peers: PeerIndex | None = None
    # sharded mode with the assume record: the shard group's reservation ledger (ledger.py)
    ledger: Ledger | None = None
    _with_peers: tuple[Any, int, Any] | None = None
    namespaces: ObjectCache | None = None  # cached (and watched) only when a plugin asked for their lister
    polls: moves.Polls = field(default_factory=moves.Polls)  # bindings in the middle of a move (moves.py)
    # the clusters whose assumptions the record changed last (a release names them: _assumptions_released)
    _assumptions_touched: tuple[str, ...] = ()
    # leadership or shard membership, the workers, start-up and shutdown (composed around this operator)
    runtime: ControllerRuntime = field(init=False)

    def __post_init__(self) -> None:
        self.runtime = ControllerRuntime(
            reconciler=self, config=self.config, client=self.client, queue=self.queue, log=log,
            key_field="binding", events_busy=self._busy,
        )
        if self.compute is None:
            self.compute = CoreExecutor(threads=self.config.workers, budget=self.config.scheduling_timeout)
        # One queue serves every profile; the configuration refuses profiles whose queueSort (or its
        # args) differ, so the first profile's QueueSort orders it. The default keeps the queue's order.
        framework = next(iter(self.profiles.values()), self.scheduler).framework
        sort = framework.queue_sort
        if sort is not None and sort.name != DEFAULT_QUEUE_SORT:
            # Ordered off the event loop, one comparison within its budget (queue.py).
            self.queue.less = framework.less
            self.queue.sort_plugin = sort.name
            self.queue.sort_profile = framework.profile.scheduler_name
            timeout = self.config.scheduling_timeout
            self.queue.sort_budget = min(SORT_BUDGET, timeout) if timeout else SORT_BUDGET
        # The pending gauges read the queue when scraped, not after every binding.
        queue = self.queue
        metrics.PENDING_BINDINGS.labels("active").set_function(lambda: queue.sizes().active)
        metrics.PENDING_BINDINGS.labels("backoff").set_function(lambda: queue.sizes().backoff)
        metrics.PENDING_BINDINGS.labels("unschedulable").set_function(lambda: queue.sizes().unschedulable)
        unscheduled.COLLECTOR.watch(self)  # fleetsched_scheduler_unscheduled_bindings: follows the caches
        if queue.hint_observer is None:
            queue.hint_observer = metrics.HintMetrics()
        if self.peers is None and any(  # a duck-typed core without settings has no such gate
            getattr(getattr(s, "settings", None), "workload_affinity", False)
            for s in (self.scheduler, *self.profiles.values())
        ):
            self.peers = PeerIndex()
        if self.config.overcommit_protection and self.assumptions is None:
            self.assumptions = AssumeRecord(
                self.config.assumption_ttl,
                on_change=self._assumptions_changed,
                on_release=self._assumptions_released,
            )
        self.namespaces = listers.wire(self.scheduler, self.profiles, self.clusters, self.bindings)
        sharding = self.config.sharding
        if self.assumptions is not None and sharding is not None and self.ledger is None:
            self.ledger = Ledger(
                self.client, self.assumptions, namespace=sharding.namespace, group=sharding.group,
                member=sharding.member, seen_version=self._cached_version,
                members=lambda: None if self.runtime.membership is None else self.runtime.membership.known,
            )

    # ---- lifecycle helpers ----------------------------------------------------------------------

    def _background(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._in_flight_background.add(task)
        task.add_done_callback(self._in_flight_background.discard)

    def _busy(self) -> bool:
        return self.queue.working()

    # ---- events from the watch --------------------------------------------------------------

    def on_binding_event(self, kind: str, event_type: str | None, obj: dict[str, Any]) -> None:
        cache = self.bindings[kind]
        key = object_key(obj)
        qkey = queue_key(kind, key)
        if event_type == "DELETED":
            cache.delete(key)
            self.queue.forget(qkey)
            self.own_generation.pop(qkey, None)
            self.skipped.pop(qkey, None)
            self.runtime.forget_owned(qkey)
            if self.assumptions is not None:
                assumptions.forget(self.assumptions, kind, obj)
            if self.peers is not None:
                self.peers.observe(kind, None, key)
            self._binding_hint_events(obj, None)
            return
        cached = cache.get(key)
        if cached is not None and resource_version(cached) == resource_version(obj) is not None:
            return  # the same object: mostly the echo of our own write, whose response is cached
        stored, previous = cache.upsert(obj)
        if not stored:
            return
        if self.assumptions is not None:  # every replica keeps every binding's in-flight capacity
            assumptions.observe(self.assumptions, kind, previous, obj)
        if self.peers is not None:
            self.peers.observe(kind, obj)
        if previous is not None:
            self._binding_hint_events(previous, obj)
        names = self.config.scheduler_names
        new_passes = self._note_skip(qkey, decision.skip_reason(obj, names))
        if self.config.sharding is not None:
            if not new_passes:
                self.runtime.forget_owned(qkey)
            elif not self.runtime.note_owned(qkey, binding_uid(obj)):
                return  # another replica's: it is pushed here if ownership moves (membership_changed)
        old_passes = previous is not None and decision.passes_filter(previous, names)
        if new_passes and (previous is None or not old_passes):
            metrics.QUEUE_INCOMING_BINDINGS.labels(metrics.EVENT_BINDING_ADD).inc()
            self.queue.push(qkey, decision.binding_priority(obj))
        elif (
            new_passes
            and previous is not None
            and decision.binding_update_enqueues(previous, obj, own_generation=self.own_generation.get(qkey))
        ):
            metrics.QUEUE_INCOMING_BINDINGS.labels(metrics.EVENT_BINDING_UPDATE).inc()
            debounce = self.config.binding_update_debounce
            self.queue.push_debounced(qkey, decision.binding_priority(obj), debounce)

    def _binding_hint_events(self, old: Mapping[str, Any], new: Mapping[str, Any] | None) -> None:
        """Queueing hints: room a binding gave back on its clusters (deleted, scaled down, moved)."""
        if not self.queue.waiting_on_events():
            return
        for kind, cluster in decision.binding_freed(old, new):
            self.queue.on_event(hints.QueueEvent(kind, cluster))

    def _note_skip(self, qkey: QueueKey, reason: str | None) -> bool:
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

    def on_cluster_event(self, event_type: str | None, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        if event_type == "DELETED":
            self.clusters.delete(key)
            if self.accurate is not None:
                self.accurate.forget(key)
            return
        stored, previous = self.clusters.upsert(obj)
        if not stored:
            return
        if previous is not None:  # cluster add events never enqueue (§3.1)
            for changed in decision.cluster_update_reconciles(previous, obj):
                self._reconcile_cluster(changed)
        self._cluster_hint_events(previous, obj)

    def _cluster_hint_events(self, previous: Mapping[str, Any] | None, obj: Mapping[str, Any]) -> None:
        """Queueing hints: what a Cluster add or update changed of what a plugin or estimator reads,
        offered to the unschedulable bindings (a heartbeat that changes none of it costs a few dict
        comparisons, and nothing at all while no binding waits)."""
        if not self.queue.waiting_on_events():
            return
        if previous is not None and not decision.cluster_reads_changed(previous, obj):
            return
        # Through the store's memo: the old version was converted for a snapshot already, and the
        # new one's conversion is the next snapshot's.
        old = self.clusters.converted(previous) if previous is not None else None
        new = self.clusters.converted(obj)
        if new is None or (previous is not None and old is None):
            return  # malformed: the store has logged it
        for kind in hints.split(hints.cluster_events(old, new)):
            self.queue.on_event(hints.QueueEvent(kind, new.name, old, new))

    def _reconcile_cluster(self, cluster: Mapping[str, Any]) -> None:
        try:
            info = cluster_from_dict(cluster)
        except ConversionError as exc:
            log.warning("cluster_unreadable", cluster=object_key(cluster), error=str(exc))
            return
        # The bindings whose reconcile affinity may match, found through the caches' index
        # (affected.py) instead of converting every binding's affinity per Cluster event.
        for kind, cache in self.bindings.items():
            for key in affected_index(cache).affected(info, self.config.scheduler_names):
                binding = cache.get(key)
                if binding is None or not self.runtime.owns(binding_uid(binding)):
                    continue
                metrics.QUEUE_INCOMING_BINDINGS.labels(metrics.EVENT_CLUSTER_CHANGED).inc()
                self.queue.push(queue_key(kind, key), decision.binding_priority(binding))

    # ---- initial sync -------------------------------------------------------------------------

    async def initial_sync(self) -> None:
        """LIST Clusters and bindings so caches are complete before anything is scheduled."""
        path = f"/apis/{CLUSTER_GROUP}/{CLUSTER_VERSION}/clusters"
        clusters, version = await self.client.list_all(path)
        self._listed[path] = (version, clusters)
        for obj in clusters:
            obj.setdefault("apiVersion", f"{CLUSTER_GROUP}/{CLUSTER_VERSION}")
            obj.setdefault("kind", "Cluster")
            self.on_cluster_event(None, watch.strip_managed_fields(obj))
        for kind, plural in PLURALS.items():
            path = f"/apis/{WORK_GROUP}/{WORK_VERSION}/{plural}"
            items, version = await self.client.list_all(path)
            self._listed[path] = (version, items)
            for obj in items:
                obj.setdefault("apiVersion", f"{WORK_GROUP}/{WORK_VERSION}")
                obj.setdefault("kind", kind)
                self.on_binding_event(kind, None, watch.strip_managed_fields(obj))
        if self.accurate is not None:
            # Karmada dials every cluster's estimator at start; a failure is retried later.
            clusters = [o["metadata"]["name"] for o in self.clusters]
            self._background(asyncio.wrap_future(self.accurate.connect_in_background(clusters)))
        runtime.settle_gc()
        log.info(
            "caches_synced",
            clusters=len(self.clusters),
            resourcebindings=len(self.bindings[RB]),
            clusterresourcebindings=len(self.bindings[CRB]),
        )

    # ---- sharding (ControllerRuntime's hooks) ---------------------------------------------------

    def uid_of(self, key: Hashable) -> str | None:
        assert isinstance(key, QueueKey)
        cache = self.bindings.get(key.kind)
        return None if cache is None else binding_uid(cache.get(key.object_key))

    def shard_objects(self) -> Iterator[tuple[Hashable, str]]:
        names = self.config.scheduler_names
        for kind, cache in self.bindings.items():
            for obj in cache:
                uid = binding_uid(obj)
                if uid is not None and decision.passes_filter(obj, names):
                    yield queue_key(kind, object_key(obj)), uid

    def on_ownership_gained(self, keys: list[Hashable]) -> None:
        for key in keys:
            assert isinstance(key, QueueKey)
            obj = self.bindings[key.kind].get(key.object_key)
            if obj is not None:
                self.queue.push(key, decision.binding_priority(obj))

    def on_not_owner(self, entry: QueuedBinding) -> None:
        metrics.SHARD.not_owner_drops.inc()

    def on_shard_change(
        self, change: MembershipChange, *, owned: int, gained: int, lost: int, held: bool
    ) -> None:
        metrics.SHARD.membership_changed(len(change.members), gained=gained, lost=lost, held=held)
        metrics.OWNED_BINDINGS.set(owned)

    def on_owned_count(self, owned: int) -> None:
        metrics.OWNED_BINDINGS.set(owned)

    # ---- workers ------------------------------------------------------------------------------

    def after_outcome(self, entry: QueuedBinding, outcome: Outcome) -> None:
        unscheduled.COLLECTOR.attempted(entry.key, outcome)
        if outcome is not Outcome.DONE:
            metrics.QUEUE_INCOMING_BINDINGS.labels(metrics.EVENT_SCHEDULE_ATTEMPT_FAILURE).inc()

    async def process(self, entry: QueuedBinding) -> Outcome:
        assert isinstance(entry.key, QueueKey)
        kind, key = entry.key.kind, entry.key.object_key
        for attempt in range(MAX_CONFLICT_RETRIES):
            obj = self.bindings[kind].get(key)
            if obj is None:
                return Outcome.DONE
            if attempt and self.config.sharding is not None:
                self.runtime.ensure_leader()  # after a 409: re-decide only if still owned (else dropped)
            try:
                return await self._process_once(kind, key, obj)
            except ApiError as exc:
                if exc.is_not_found:
                    self.bindings[kind].delete(key)
                    return Outcome.DONE
                if not exc.is_conflict:
                    log.warning("binding_write_failed", binding=key, kind=kind, error=str(exc))
                    return Outcome.ERROR
                metrics.WRITE_CONFLICTS.inc()
                log.info("binding_write_conflict", binding=key, kind=kind)
                await self._refresh(kind, key)
        return Outcome.ERROR

    async def _refresh(self, kind: str, key: str) -> None:
        try:
            fresh = await self.client.get(binding_path(kind, key))
        except ApiError as exc:
            if exc.is_not_found:
                self.bindings[kind].delete(key)
                return
            raise
        fresh.setdefault("kind", kind)
        self.bindings[kind].upsert(fresh)

    async def _process_once(self, kind: str, key: str, obj: dict[str, Any]) -> Outcome:
        """One pass over a cached binding: decide, compute, write, report."""
        attempt = self._decide(kind, key, obj)
        if self._move_goes_on(obj, attempt):
            return await self._move_step(kind, key, obj)
        if isinstance(attempt, Outcome):
            return attempt
        if attempt.decision.verdict is decision.Verdict.OBSERVE_GENERATION:
            await self._write_observed_generation(kind, key, obj)
            return Outcome.DONE
        started = time.perf_counter()
        written = False
        try:
            result, over_budget, reservation = await self._attempt(key, obj, attempt.read)
        except ReserveConflict:
            log.info("binding_reserve_conflict", binding=key, kind=kind, attempts=MAX_RESERVE_ATTEMPTS)
            return Outcome.ERROR  # back with backoff; nothing written
        try:
            if result.condition is None:
                self._unreserve(kind, key, reservation)
                return Outcome.ERROR
            cycle, result = await self._binding_cycle(key, result, decision.effective_scheduler_name(obj))
            if not result.scheduled:
                self._unreserve(kind, key, reservation)  # a Reserve, Permit or PreBind plugin refused it
            now = dt.datetime.now(dt.UTC)
            fresh = isinstance(attempt.read, decision.BindingRead) and reschedule_required(
                attempt.read.binding.reschedule_triggered_at, attempt.read.status.last_scheduled_time)
            step, warning = moves.after_core(obj, render_into_binding(obj, result, now=now),
                                             self.config.move_budget, fresh=fresh, now=now)
            rendered = step.rendered
            patches = compute_patches(obj, rendered, explain=explanation(result) if result.attempts else None)
            try:
                await self._write(kind, key, obj, patches, result, cycle)
            except BaseException as exc:
                self._unreserve(kind, key, reservation)
                if isinstance(exc, ApiError) and is_quota_exceeded(exc):
                    await self._report_quota_exceeded(kind, key, obj, exc)
                    return Outcome.ERROR
                raise
            written = result.scheduled
        finally:
            if reservation is not None and self.ledger is not None:
                self.ledger.written(key, failed=not written)
        self._report(kind, key, obj, rendered, result, attempt.decision, patches, started=started)
        self._after_move(kind, key, obj, step, warning)
        outcome = queue_outcome(result, over_budget=over_budget)
        if outcome is Outcome.UNSCHEDULABLE:
            self._note_rejection(kind, key, obj, result)
        return outcome

    def _note_rejection(self, kind: str, key: str, obj: Mapping[str, Any], result: ScheduleResult) -> None:
        """Queueing hints: who rejected which clusters, kept with the binding while it waits as
        unschedulable, and the events its profile's plugins registered for them."""
        rejections = hints.rejections_of(result)
        if self.assumptions is not None:
            short = next((r.clusters for r in rejections if r.plugin == hints.ESTIMATOR), None)
            if short:
                rejections += (hints.Rejection(hints.ASSUME_RECORD, short),)
        framework = getattr(self._scheduler_for(decision.effective_scheduler_name(obj)), "framework", None)
        registrations = getattr(framework, "events_to_register", None) or _every_event
        hint = functools.partial(hints.requeue_hint, rejections, registrations=registrations)
        self.queue.note_rejection(queue_key(kind, key), hint)

    # ---- moves within a budget (moves.py) -------------------------------------------------------

    def _move_goes_on(self, obj: Mapping[str, Any], attempt: Outcome | _Attempt) -> bool:
        """A pending move goes on without the core (nothing else to decide, or only the replicas
        "changed" by the step written)."""
        if moves.TARGET_ANNOTATION not in ((obj.get("metadata") or {}).get("annotations") or {}):
            return False  # the common case, at the cost of one lookup
        if not decision.passes_filter(obj, self.config.scheduler_names):
            return False
        idle = attempt is Outcome.DONE or (
            isinstance(attempt, _Attempt) and attempt.decision.verdict is decision.Verdict.OBSERVE_GENERATION
        )
        replicas = isinstance(attempt, _Attempt) and attempt.decision.reason == decision.REPLICAS_CHANGED
        return moves.resumes(obj, nothing_else=idle, replicas_reason=replicas)

    async def _move_step(self, kind: str, key: str, obj: dict[str, Any]) -> Outcome:
        """The next step of a pending move, written with the generation it gives the binding."""
        step, warning = moves.going_on(obj, self.config.move_budget, dt.datetime.now(dt.UTC))
        patches = compute_patches(obj, step.rendered, explain=None)
        if patches.spec is not None:
            await self._write(kind, key, obj, dataclasses.replace(patches, status=None), None, None)
        fresh = self.bindings[kind].get(key) or obj
        if int((fresh.get("status") or {}).get("schedulerObservedGeneration") or 0) != int(
            (fresh.get("metadata") or {}).get("generation") or 0
        ):
            await self._write_observed_generation(kind, key, fresh)
        self._after_move(kind, key, obj, step, warning)
        return Outcome.DONE

    def _after_move(self, kind: str, key: str, obj: Mapping[str, Any], step: moves.Step,
                    warning: str | None) -> None:
        """The step's Event on the binding, and another look while the move is pending."""
        events = self.runtime.events
        if events is not None and warning is not None:
            events.record(InvolvedObject.of_binding(obj), WARNING, REASON_FAILED, warning)
        if events is not None and step.message is not None:
            events.record(InvolvedObject.of_binding(obj), NORMAL, moves.REASON_STEP, step.message)
        qkey = queue_key(kind, key)
        if step.pending:
            self.polls.again(qkey, lambda: self.queue.push(qkey, decision.binding_priority(obj)))
        elif self.polls.timers:
            self.polls.forget(qkey)

    def _decide(self, kind: str, key: str, obj: dict[str, Any]) -> Outcome | _Attempt:
        """§3.4: an Outcome when there is nothing to schedule, else what the attempt starts from."""
        if not decision.passes_filter(obj, self.config.scheduler_names):
            return Outcome.DONE
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            noun = "resourceBinding" if kind == RB else "clusterResourceBinding"
            self._record(obj, WARNING, REASON_FAILED, f"skip schedule deleting {noun}: {key}")
            return Outcome.DONE
        if (obj.get("spec") or {}).get("placement") is None:
            log.warning("binding_without_placement", binding=key, kind=kind)
            return Outcome.ERROR
        try:
            read: decision.BindingRead | ConversionError = decision.read_binding(obj)
        except ConversionError as exc:
            # Unreadable: no rule can be applied to it; the attempt reports why.
            return _Attempt(decision.Decision(decision.Verdict.SCHEDULE, decision.UNREADABLE), exc)
        verdict = decision.should_schedule(read, self.clusters.terminating())
        if verdict.verdict is decision.Verdict.NOTHING:
            return Outcome.DONE
        return _Attempt(verdict, read)

    async def _attempt(
        self, key: str, obj: Mapping[str, Any], read: decision.BindingRead | ConversionError
    ) -> tuple[ScheduleResult, bool, Reservation | None]:
        """The core's result for the binding, whether it ran past its budget, and (gate
        SchedulingOvercommitProtection) its footprint reserved in the assume record. Bad input and
        an exceeded budget become a SchedulerError result, reported like any other. A decision
        refused at Reserve is made again against the record as it is now (``ReserveConflict``
        after ``MAX_RESERVE_ATTEMPTS``)."""
        if isinstance(read, ConversionError):
            # Bad input: report it on the binding and keep serving the others; a spec change retries.
            unreadable = ScheduleResult(key, Condition(False, SCHEDULER_ERROR, str(read)), None, None, False)
            return unreadable, False, None
        scheduler_name = decision.effective_scheduler_name(obj)
        for _ in range(MAX_RESERVE_ATTEMPTS):
            version = self.assumptions.version if self.assumptions is not None else 0
            peer_version = self.peers.version if self.peers is not None else 0
            try:
                result, snapshot = await self._compute(
                    key, read.binding, read.status, scheduler_name=scheduler_name
                )
            except BudgetExceeded as exc:
                # Reported like any scheduler error (condition, Event), then retried with backoff.
                return (
                    ScheduleResult(key, Condition(False, SCHEDULER_ERROR, str(exc)), None, None, False),
                    True,
                    None,
                )
            if not result.scheduled or result.clusters is None:
                if self.assumptions is not None:
                    result = name_shortfall(self.assumptions, result, snapshot.names)
                return result, False, None
            if self.peers is not None and self.peers.changed_since(read.binding, peer_version):
                metrics.RESERVE_REDECISIONS.inc()  # a peer of its groups moved meanwhile
                continue
            reservation = None
            if self.assumptions is not None and result.clusters != read.binding.clusters:
                # (an unchanged placement assumes nothing: Karmada's patch is empty)
                scheduler = self._scheduler_for(scheduler_name)
                footprints, take = reserve.reservation(
                    self.assumptions, scheduler, self.clusters.snapshot(), key, read.binding, result
                )
                reservation = take(version)
                if reservation is not None and self.ledger is not None:
                    # sharded: agreed with the other replicas before the write (scheduler/ledger.py)
                    base = str(resource_version(obj) or "")
                    try:
                        reservation = await self.ledger.commit(key, footprints, reservation, take, base=base)
                    except DecisionTooLarge as exc:  # never fits: said on the binding, not retried
                        refused = Condition(False, SCHEDULER_ERROR, str(exc))
                        return ScheduleResult(key, refused, None, None, False), False, None
                if reservation is None:
                    metrics.RESERVE_REDECISIONS.inc()
                    continue
            if self.peers is not None:
                self.peers.place(read.binding, (t.name for t in result.clusters))
            return result, False, reservation
        raise ReserveConflict(key)

    # ---- the assume record (gate SchedulingOvercommitProtection) -------------------------------

    def _cached_version(self, key: str) -> int | None:
        """The resourceVersion of the ResourceBinding ``key`` as cached (None: not cached)."""
        return resource_version(self.bindings[RB].get(key))

    def _assumptions_changed(self, clusters: Iterable[str]) -> None:
        if self.assumptions is not None:
            clusters = tuple(clusters)
            self._assumptions_touched = clusters
            reserve.publish(self.assumptions, clusters)

    def _assumptions_released(self, reason: Any, count: int) -> None:
        """The record gave room back (it reports a release right after the change naming its
        clusters): an ASSUMPTION_RELEASED event on each, for the queueing hints."""
        reserve.count_released(reason, count)
        touched, self._assumptions_touched = self._assumptions_touched, ()
        if self.queue.waiting_on_events():
            for cluster in touched:
                self.queue.on_event(hints.QueueEvent(hints.ClusterEvent.ASSUMPTION_RELEASED, cluster))

    def _unreserve(self, kind: str, key: str, reservation: Reservation | None) -> None:
        """A decision that will not be written: its reservation given back, its peer entry as stored."""
        if reservation is not None and self.assumptions is not None:
            self.assumptions.unreserve(reservation)
        if self.peers is not None:
            self.peers.observe(kind, self.bindings[kind].get(key), key)

    async def _report_quota_exceeded(
        self, kind: str, key: str, obj: Mapping[str, Any], exc: ApiError
    ) -> None:
        """A write refused with 403 QuotaExceeded (a FederatedResourceQuota's admission): as Karmada's
        getConditionByError, ``Scheduled=False`` reason QuotaExceeded with the API's message and a
        Warning Event; the binding is retried with backoff."""
        result = ScheduleResult(key, Condition(False, QUOTA_EXCEEDED, exc.message), None, None, False)
        fresh = self.bindings[kind].get(key) or obj
        rendered = render_into_binding(fresh, result, now=dt.datetime.now(dt.UTC))
        patches = compute_patches(fresh, rendered, explain=None)
        log.warning("binding_quota_exceeded", binding=key, kind=kind, message=exc.message)
        metrics.SCHEDULE_ATTEMPTS.labels(metrics.RESULT_ERROR, metrics.RECONCILE_SCHEDULE).inc()
        self._record(fresh, WARNING, REASON_FAILED, exc.message)
        if patches.status is None:
            return
        self.runtime.ensure_leader()
        version = (fresh.get("metadata") or {}).get("resourceVersion")
        response = await self._write_status(kind, key, {"metadata": {"resourceVersion": version},
                                                        **patches.status}, result)
        metrics.API_WRITES.labels("status", "success").inc()
        self._store_response(kind, response)

    async def _write_observed_generation(self, kind: str, key: str, obj: Mapping[str, Any]) -> None:
        self.runtime.ensure_leader()
        path = binding_path(kind, key, status=True)
        response = await self.client.merge_patch(path, observed_generation_patch(obj))
        metrics.API_WRITES.labels("status", "success").inc()
        self._store_response(kind, response)

    async def _write(
        self,
        kind: str,
        key: str,
        obj: Mapping[str, Any],
        patches: Patches,
        result: ScheduleResult | None,
        cycle: BindingCycle | None,
    ) -> None:
        """At most two writes: spec + annotations (recording the generation it gives the binding,
        so its watch event is not taken for a user change), then status, conditional on the
        resourceVersion the spec write returned. A failed write unreserves what the binding
        cycle reserved; a successful one runs PostBind."""
        profile = decision.effective_scheduler_name(obj)  # the pool of its binding-cycle plugins
        qkey = queue_key(kind, key)
        resource_version = (obj.get("metadata") or {}).get("resourceVersion")
        if patches.spec is not None:
            self.runtime.ensure_leader()
            self.own_generation[qkey] = patches.generation_after_spec
            try:
                response = await self.client.merge_patch(binding_path(kind, key), patches.spec)
            except (ApiError, NotOwner, OSError) as exc:  # NotOwner: the write guard; OSError: no answer
                if not isinstance(exc, NotOwner):
                    metrics.API_WRITES.labels("spec", "error").inc()
                self.own_generation.pop(qkey, None)
                if cycle is not None:
                    await self._in_profile_quietly(cycle.unreserve, key, profile)
                raise
            metrics.API_WRITES.labels("spec", "success").inc()
            self.own_generation[qkey] = int((response.get("metadata") or {}).get("generation") or 0)
            self._store_response(kind, response)
            resource_version = (response.get("metadata") or {}).get("resourceVersion")
            if patches.status is not None and "schedulerObservedGeneration" in patches.status["status"]:
                patches.status["status"]["schedulerObservedGeneration"] = self.own_generation[qkey]
        if patches.status is not None:
            self.runtime.ensure_leader()
            body = {"metadata": {"resourceVersion": resource_version}, **patches.status}
            try:
                response = await self._write_status(kind, key, body, result)
            except (ApiError, NotOwner, OSError) as exc:
                if not isinstance(exc, NotOwner):
                    metrics.API_WRITES.labels("status", "error").inc()
                if cycle is not None:
                    await self._in_profile_quietly(cycle.unreserve, key, profile)
                raise
            metrics.API_WRITES.labels("status", "success").inc()
            self._store_response(kind, response)
        if cycle is not None:
            await self._in_profile_quietly(cycle.post_bind, key, profile)

    def _report(
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
        """Events, the attempt's metrics and its log line."""
        assert result.condition is not None
        self._record_outcome(kind, key, obj, rendered, result)
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

    async def _compute(
        self, key: str, binding: SchedulingBinding, status: BindingStatus, *, scheduler_name: str
    ) -> tuple[ScheduleResult, Any]:
        """The core of the binding's profile on the current cluster snapshot, in a core thread
        within the budget (``BudgetExceeded`` past it), or first on the loop for a slice when the
        profile only computes (``Scheduler.computes_only``), with the snapshot it ran against (the
        clusters carrying their assumptions under SchedulingOvercommitProtection). The one step that
        computes; everything around it is I/O."""
        assert self.compute is not None
        snapshot = self.clusters.snapshot()
        if self.peers is not None:
            snapshot = self._snapshot_with_peers(snapshot)
        if self.assumptions is not None:
            snapshot = self.assumptions.overlay(snapshot)
        scheduler = self._scheduler_for(scheduler_name)
        result = await self.compute.run(
            scheduler.schedule, binding, status, snapshot, key=key, inline=scheduler.computes_only,
            pool=scheduler_name,  # a profile's stuck threads never take another's (compute.py)
        )
        return result, snapshot

    def _snapshot_with_peers(self, snapshot: Any) -> Any:
        """``snapshot`` with the peers as they are now (derived once per change of either)."""
        assert self.peers is not None
        cached = self._with_peers
        if cached is not None and cached[0] is snapshot and cached[1] == self.peers.version:
            return cached[2]
        derived = snapshot.with_peers(self.peers.peers())
        self._with_peers = (snapshot, self.peers.version, derived)
        return derived

    def _scheduler_for(self, scheduler_name: str) -> Scheduler:
        """The Scheduler of the profile serving ``scheduler_name`` (``scheduler`` without profiles)."""
        return self.profiles.get(scheduler_name, self.scheduler)

    async def _binding_cycle(
        self, key: str, result: ScheduleResult, scheduler_name: str
    ) -> tuple[BindingCycle | None, ScheduleResult]:
        """Reserve, Permit (waiting if a plugin asks to) and PreBind of the binding's profile before
        the write. A refusal turns the result into a failed condition only (nothing else is written).
        Each point runs in a core thread of the profile (``_in_profile``), never on the event loop."""
        framework = self._scheduler_for(scheduler_name).framework
        if not framework.has_binding_cycle or not result.scheduled or result.clusters is None:
            return None, result
        cycle = framework.binding_cycle(result.cycle_context(), result.clusters)
        try:
            status = await self._in_profile(cycle.reserve, key, scheduler_name)
            if status.is_success:
                status = await self._in_profile(cycle.permit, key, scheduler_name)
                if status.code is Code.WAIT:
                    status = await self._wait_on_permit(cycle)
            if status.is_success:
                status = await self._in_profile(cycle.pre_bind, key, scheduler_name)
        except BudgetExceeded as exc:  # a plugin that did not return: its thread is left behind
            status = Status(Code.ERROR, (str(exc),), exc.plugin or None)
            self._background(self._in_profile_quietly(cycle.unreserve, key, scheduler_name))
        if status.is_success:
            return cycle, result
        reason = "Unschedulable" if status.is_rejection else "SchedulerError"
        message = f"{status.plugin}: {status.message()}" if status.plugin else status.message()
        refused = dataclasses.replace(
            result,
            condition=Condition(False, reason, message),
            clusters=None,
            write_placement_annotation=False,
        )
        return None, refused

    async def _wait_on_permit(self, cycle: BindingCycle) -> Status:
        """Woken by the framework when every waiting plugin allowed the binding or one rejected it
        (from whatever thread did), else by a timer at its Permit timeout, which wait_on_permit
        answers with the timeout rejection. A decision always reaches the loop after a clear
        (call_soon_threadsafe), so none is lost; it loops again only when the timer fires a hair
        before the framework's clock reaches the deadline."""
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()
        cycle.on_permit_decided(lambda: loop.call_soon_threadsafe(woken.set))
        while (answer := cycle.wait_on_permit()) is None:
            woken.clear()
            timer = loop.call_later(cycle.permit_seconds_left(), woken.set)
            try:
                await woken.wait()
            finally:
                timer.cancel()
        return answer

    async def _in_profile(self, call: Callable[[], T], key: str, scheduler_name: str) -> T:
        """A binding-cycle point in a core thread of the binding's profile, within --scheduling-timeout:
        a plugin that hangs at Reserve, Permit, PreBind, Unreserve or PostBind holds one thread of its
        own profile (``BudgetExceeded`` names it), never the event loop."""
        assert self.compute is not None
        return await self.compute.run(call, key=key, pool=scheduler_name)

    async def _in_profile_quietly(self, call: Callable[[], object], key: str, scheduler_name: str) -> None:
        """``_in_profile`` for what has nothing to report (Unreserve, PostBind): an overrun is counted
        by the executor and logged, and changes nothing that was written."""
        try:
            await self._in_profile(call, key, scheduler_name)
        except BudgetExceeded as exc:
            log.warning("binding_cycle_overrun", binding=key, error=str(exc))

    async def _write_status(
        self, kind: str, key: str, body: dict[str, Any], result: ScheduleResult | None
    ) -> dict[str, Any]:
        """Status patch; on 409 re-read and re-render only the status (spec is already written)."""
        path = binding_path(kind, key, status=True)
        for attempt in range(MAX_CONFLICT_RETRIES):
            try:
                return await self.client.merge_patch(path, body)
            except ApiError as exc:
                if not exc.is_conflict or attempt == MAX_CONFLICT_RETRIES - 1:
                    raise
                metrics.WRITE_CONFLICTS.inc()
            await self._refresh(kind, key)
            fresh = self.bindings[kind].get(key)
            if fresh is None:
                raise ApiError(404, "NotFound", f"{kind} {key} disappeared")
            assert result is not None  # a move's step writes no status through here
            status_only = dataclasses.replace(result, clusters=None, write_placement_annotation=False)
            rendered = render_into_binding(fresh, status_only, now=dt.datetime.now(dt.UTC))
            patches = compute_patches(fresh, rendered, explain=None)
            if patches.status is None:
                return fresh
            self.runtime.ensure_leader()
            body = {
                "metadata": {"resourceVersion": (fresh.get("metadata") or {}).get("resourceVersion")},
                **patches.status,
            }
        raise AssertionError("unreachable")

    def _store_response(self, kind: str, response: dict[str, Any]) -> None:
        if response.get("metadata"):
            response.setdefault("kind", kind)
            # as the watch does
            stored, previous = self.bindings[kind].upsert(watch.strip_managed_fields(response))
            if stored and self.assumptions is not None:
                assumptions.observe(self.assumptions, kind, previous, response)
            if stored and self.peers is not None:
                self.peers.observe(kind, response)
            version = response["metadata"].get("resourceVersion")
            if version:
                self.own_versions[version] = None
                if len(self.own_versions) > MAX_OWN_VERSIONS:  # echoes lost with a broken watch
                    del self.own_versions[next(iter(self.own_versions))]

    def _is_own_write(self, version: str) -> bool:
        """The watch event at ``version`` is the echo of one of our writes, whose answer is cached."""
        return self.own_versions.pop(version, 0) is None

    # ---- events ---------------------------------------------------------------------------------

    def _record(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        if self.runtime.events is None:
            return
        self.runtime.events.record(InvolvedObject.of_binding(obj), type_, reason, message)
        self.runtime.events.record(InvolvedObject.of_template(obj), type_, reason, message)

    def _record_outcome(
        self, kind: str, key: str, obj: Mapping[str, Any], rendered: Mapping[str, Any], result: ScheduleResult
    ) -> None:
        if self.runtime.events is None or result.condition is None:
            return
        terms = ((obj.get("spec") or {}).get("placement") or {}).get("clusterAffinities")
        if terms is not None:
            names = [t.get("affinityName") for t in terms]
            for attempt in result.attempts:
                if attempt.error and attempt.affinity_name in names:
                    index = names.index(attempt.affinity_name)
                    message = group_failure_message(kind, key, index, attempt.error)
                    self._record(obj, WARNING, REASON_FAILED, message)  # binding and template, as Karmada
        if result.condition.status:
            clusters = (rendered.get("spec") or {}).get("clusters") or []
            self._record(obj, NORMAL, REASON_SUCCEED, success_message(kind, clusters))
        else:
            self._record(obj, WARNING, REASON_FAILED, result.condition.message)
            mistakes.record_hints(self.runtime.events, obj, self.clusters.snapshot().clusters)

    # ---- watches ------------------------------------------------------------------------------

    def watching(self, *, stop: asyncio.Event, ready: asyncio.Event) -> Awaitable[Any]:
        """The three watches (fleetsched.kube.watch, not kopf: its per-object worker tasks, queues and
        timers cost more than the handling of the event), until ``stop``. managedFields are dropped
        on arrival: nothing here reads them."""

        def on_rb(event_type: str | None, obj: dict[str, Any]) -> None:
            self.on_binding_event(RB, event_type, obj)

        def on_crb(event_type: str | None, obj: dict[str, Any]) -> None:
            self.on_binding_event(CRB, event_type, obj)

        work, clusters = f"{WORK_GROUP}/{WORK_VERSION}", f"{CLUSTER_GROUP}/{CLUSTER_VERSION}"
        rb, crb = f"/apis/{work}/{PLURALS[RB]}", f"/apis/{work}/{PLURALS[CRB]}"
        cl = f"/apis/{clusters}/clusters"
        # Each watch starts where the initial sync's LIST of it ended, instead of listing again.
        listed, self._listed = self._listed, {}
        watches = [
            watch.Watch(self.client, rb, on_rb, api_version=work, kind=RB, listed=listed.get(rb),
                        transform=watch.strip_managed_fields, skip_version=self._is_own_write),
            watch.Watch(self.client, crb, on_crb, api_version=work, kind=CRB, listed=listed.get(crb),
                        transform=watch.strip_managed_fields, skip_version=self._is_own_write),
            watch.Watch(self.client, cl, self.on_cluster_event, api_version=clusters, kind="Cluster",
                        listed=listed.get(cl), transform=watch.strip_managed_fields),
        ]
        watches += listers.namespace_watches(self.client, self.namespaces)
        if self.assumptions is None:
            return watch.run_watches(watches, stop=stop, ready=ready)
        return self._watching_with_sweep(watch.run_watches(watches, stop=stop, ready=ready), stop)

    async def _watching_with_sweep(self, watching: Awaitable[Any], stop: asyncio.Event) -> Any:
        assert self.assumptions is not None
        helpers = [asyncio.create_task(reserve.sweep(self.assumptions, stop), name="assumption-gc")]
        if self.ledger is not None:
            helpers.append(asyncio.create_task(self.ledger.run(stop), name="assumption-ledger"))
        try:
            return await watching
        finally:
            for task in helpers:
                task.cancel()

    # ---- lifecycle (ControllerRuntime.run) ------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> int:
        return await self.runtime.run(stop)

    def ready(self) -> tuple[bool, str]:
        return self.runtime.ready()

    async def before_sync(self) -> None:
        """Nothing to check before the first LIST."""

    def on_done(self) -> None:
        """Nothing: the pending gauges read the queue when scraped."""

    def on_leading(self, leading: bool) -> None:
        metrics.LEADER.set(1 if leading else 0)

    def on_stopped(self) -> None:
        self.polls.close()
        if self.compute is not None:
            self.compute.close()
