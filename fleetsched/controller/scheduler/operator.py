"""The scheduler operator: watch events in, scheduling results out. This module wires the parts
and runs them; each part lives in its own module, laid out as kube-scheduler's ``pkg/scheduler``:

  watch events (bindings, Clusters; fleetsched.kube.watch) -> ``eventhandlers``: the caches
  (``store``) and which keys to queue (``decision``) -> SchedulingQueue -> N workers, each taking a
  key through ``schedule_one``: §3.4 decision, the pure core on the current cluster snapshot (in a
  core thread within the per-binding budget, ``compute``), the decision assumed in the assume record
  (``assume``) -> ``binding_cycle``: the framework's Reserve … PreBind, at most two writes per
  binding (spec + annotations, then status, retried from a fresh read on 409 Conflict), PostBind,
  or one failure handler -> ``reporting``: Events on the binding and its template, metrics.

Only the Lease holder's workers take keys from the queue; standbys keep their caches and queue
warm. In sharded mode (``--shard-mode=lease``, ``controller/runtime/shard.py``) every replica is active
and handles only the bindings it owns (rendezvous hashing of ``metadata.uid`` over the live
members): ownership is checked at push, at pop and before every write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.cache import ClusterStore, ObjectCache, object_key
from fleetsched.controller.runtime.controller import ControllerRuntime
from fleetsched.controller.runtime.controller import NotLeader as NotLeader  # raised by runtime.ensure_leader
from fleetsched.controller.runtime.controller import (
    NotOwner as NotOwner,  # raised by runtime.ensure_leader, sharded
)
from fleetsched.controller.runtime.leader import LeaderElectionConfig
from fleetsched.controller.runtime.queue import SORT_BUDGET, Outcome, QueuedBinding, QueueKey, SchedulingQueue
from fleetsched.controller.runtime.shard import MembershipChange, ShardConfig
from fleetsched.controller.scheduler import decision, listers, moves, unscheduled
from fleetsched.controller.scheduler.assume import NoRecord, Record, WatchedRecord
from fleetsched.controller.scheduler.binding_cycle import Binder
from fleetsched.controller.scheduler.compute import DEFAULT_BUDGET, CoreExecutor, Profiles
from fleetsched.controller.scheduler.eventhandlers import EventHandlers
from fleetsched.controller.scheduler.peers import NoPeers, PeerIndex, Peers
from fleetsched.controller.scheduler.reporting import Reporter
from fleetsched.controller.scheduler.schedule_one import SchedulingCycle
from fleetsched.controller.scheduler.store import BindingStore, binding_uid, queue_key
from fleetsched.kube.client import Connection, KubeClient
from fleetsched.scheduler import Scheduler
from fleetsched.scheduler.assume import DEFAULT_TTL
from fleetsched.scheduler.framework.defaults import DEFAULT_QUEUE_SORT
from fleetsched.scheduler.stepping import MoveBudget

log = structlog.get_logger("fleetsched.scheduler")


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
    # the caches, and what is known of our own writes
    store: BindingStore = field(default_factory=BindingStore)
    polls: moves.Polls = field(default_factory=moves.Polls)  # bindings in the middle of a move (moves.py)
    # the parts, wired in __post_init__
    runtime: ControllerRuntime = field(init=False)
    report: Reporter = field(init=False)
    # gate WorkloadAffinity: the ResourceBindings with an affinity group and their targets (NoPeers off)
    peers: Peers = field(init=False)
    assumptions: Record = field(init=False)  # gate SchedulingOvercommitProtection (NoRecord when off)
    handlers: EventHandlers = field(init=False)
    scheduling: SchedulingCycle = field(init=False)
    namespaces: ObjectCache | None = field(init=False)  # cached only when a plugin asked for their lister
    _in_flight_background: set[asyncio.Future[Any]] = field(default_factory=set)

    def __post_init__(self) -> None:
        config = self.config
        self.runtime = ControllerRuntime(
            reconciler=self, config=config, client=self.client, queue=self.queue, log=log,
            key_field="binding", events_busy=self.queue.working,
        )
        runtime = self.runtime
        self.report = Reporter(
            events=lambda: runtime.events, clusters=lambda: self.store.clusters.snapshot().clusters
        )
        if self.compute is None:
            self.compute = CoreExecutor(threads=config.workers, budget=config.scheduling_timeout)
        self._order_queue()
        affinity = any(  # a duck-typed core without settings has no such gate
            getattr(getattr(s, "settings", None), "workload_affinity", False)
            for s in (self.scheduler, *self.profiles.values())
        )
        self.peers = PeerIndex() if affinity else NoPeers()
        self.assumptions = self._assume_record()
        self.store.observers.append(self.assumptions.observe)
        self.store.observers.append(self.peers.stored)
        store = self.store
        self.namespaces = listers.wire(self.scheduler, self.profiles, store.clusters, store.bindings)
        self.handlers = EventHandlers(
            client=self.client, store=self.store, queue=self.queue, runtime=runtime, report=self.report,
            assumptions=self.assumptions, scheduler_names=config.scheduler_names,
            sharded=config.sharding is not None, debounce=config.binding_update_debounce,
            accurate=self.accurate, namespaces=self.namespaces, background=self._background,
        )
        profiles = Profiles(self.scheduler, self.profiles)
        binder = Binder(
            client=self.client, store=self.store, runtime=runtime, compute=self.compute, profiles=profiles,
            assumptions=self.assumptions, report=self.report, peers=self.peers,
            move_budget=config.move_budget,
        )
        self.scheduling = SchedulingCycle(
            store=self.store, queue=self.queue, runtime=runtime, compute=self.compute, profiles=profiles,
            assumptions=self.assumptions, binder=binder, report=self.report, polls=self.polls,
            scheduler_names=config.scheduler_names, sharded=config.sharding is not None, peers=self.peers,
            move_budget=config.move_budget,
        )

    def _order_queue(self) -> None:
        """One queue serves every profile; the configuration refuses profiles whose queueSort (or
        its args) differ, so the first profile's QueueSort orders it. The default keeps the queue's
        order. The pending gauges read the queue when scraped, not after every binding."""
        queue = self.queue
        framework = next(iter(self.profiles.values()), self.scheduler).framework
        sort = framework.queue_sort
        if sort is not None and sort.name != DEFAULT_QUEUE_SORT:
            # Ordered off the event loop, one comparison within its budget (queue.py).
            queue.less = framework.less
            queue.sort_plugin = sort.name
            queue.sort_profile = framework.profile.scheduler_name
            timeout = self.config.scheduling_timeout
            queue.sort_budget = min(SORT_BUDGET, timeout) if timeout else SORT_BUDGET
        metrics.PENDING_BINDINGS.labels("active").set_function(lambda: queue.sizes().active)
        metrics.PENDING_BINDINGS.labels("backoff").set_function(lambda: queue.sizes().backoff)
        metrics.PENDING_BINDINGS.labels("unschedulable").set_function(lambda: queue.sizes().unschedulable)
        unscheduled.COLLECTOR.watch(self)  # fleetsched_scheduler_unscheduled_bindings: follows the caches
        if queue.hint_observer is None:
            queue.hint_observer = metrics.HintMetrics()

    def _assume_record(self) -> Record:
        """The assume record under gate SchedulingOvercommitProtection (shared with the shard group
        through its ledger in sharded mode), else one that assumes nothing."""
        if not self.config.overcommit_protection:
            return NoRecord()
        record = WatchedRecord(self.config.assumption_ttl, on_released=self._assumptions_released)
        sharding = self.config.sharding
        if sharding is not None:
            runtime = self.runtime
            record.share(
                self.client, namespace=sharding.namespace, group=sharding.group, member=sharding.member,
                seen_version=self.store.cached_version,
                members=lambda: None if runtime.membership is None else runtime.membership.known,
            )
        return record

    def _assumptions_released(self, clusters: tuple[str, ...]) -> None:
        self.handlers.on_assumptions_released(clusters)

    def _background(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._in_flight_background.add(task)
        task.add_done_callback(self._in_flight_background.discard)

    # ---- the caches (tests and the listers read them) -------------------------------------------

    @property
    def bindings(self) -> dict[str, ObjectCache]:
        return self.store.bindings

    @property
    def clusters(self) -> ClusterStore:
        return self.store.clusters

    # ---- events from the watch (eventhandlers.py) ------------------------------------------------

    def on_binding_event(self, kind: str, event_type: str | None, obj: dict[str, Any]) -> None:
        self.handlers.on_binding_event(kind, event_type, obj)

    def on_cluster_event(self, event_type: str | None, obj: dict[str, Any]) -> None:
        self.handlers.on_cluster_event(event_type, obj)

    async def initial_sync(self) -> None:
        await self.handlers.initial_sync()

    def watching(self, *, stop: asyncio.Event, ready: asyncio.Event) -> Awaitable[Any]:
        return self.handlers.watching(stop=stop, ready=ready)

    # ---- workers (schedule_one.py) ---------------------------------------------------------------

    async def process(self, entry: QueuedBinding) -> Outcome:
        return await self.scheduling.process(entry)

    def after_outcome(self, entry: QueuedBinding, outcome: Outcome) -> None:
        unscheduled.COLLECTOR.attempted(entry.key, outcome)
        if outcome is not Outcome.DONE:
            metrics.QUEUE_INCOMING_BINDINGS.labels(metrics.EVENT_SCHEDULE_ATTEMPT_FAILURE).inc()

    # ---- sharding (ControllerRuntime's hooks) ---------------------------------------------------

    def uid_of(self, key: Hashable) -> str | None:
        assert isinstance(key, QueueKey)
        cache = self.store.bindings.get(key.kind)
        return None if cache is None else binding_uid(cache.get(key.object_key))

    def shard_objects(self) -> Iterator[tuple[Hashable, str]]:
        names = self.config.scheduler_names
        for kind, cache in self.store.bindings.items():
            for obj in cache:
                uid = binding_uid(obj)
                if uid is not None and decision.passes_filter(obj, names):
                    yield queue_key(kind, object_key(obj)), uid

    def on_ownership_gained(self, keys: list[Hashable]) -> None:
        for key in keys:
            assert isinstance(key, QueueKey)
            obj = self.store.get(key.kind, key.object_key)
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
