"""What the scheduler operator and the policy controller run the same way.

Both watch the API server, feed a ``SchedulingQueue`` and drain it with N workers, where only the
Lease holder's workers write (or, sharded, each replica's workers for the objects it owns). The
controller is a ``Reconciler``: it says how to sync, how to watch and how to process one key.
``ControllerRuntime`` is composed around it and does the rest once:

* the one start-up routine (``run``: sync, waiting for an unreachable API server; the watches until
  they watch; the election and the workers), leadership/readiness, the worker loop (a lost Lease
  puts the key back, a bug never kills a worker), in-flight tracking and the graceful shutdown
  (finish in-flight work, flush Events, release the Lease, stop watching);
* sharded mode (``config.sharding``, a ``shard.ShardConfig``; exclusive with ``leader_election``):
  the replica holds a member Lease (``shard.ShardMembership``) instead of competing for one and
  handles only the objects it owns. The reconciler is then a ``ShardedReconciler`` too: it says
  which UID a key is sharded by and which objects it could handle, and calls ``note_owned`` /
  ``forget_owned`` as its caches change. The runtime checks ownership at pop, and
  ``ensure_leader()`` (called before every write) checks it for the key the worker is on: a key no
  longer owned raises ``NotOwner`` and is DROPPED (the owner has it), unlike ``NotLeader``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from structlog.typing import FilteringBoundLogger

from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.events import EventRecorder
from fleetsched.controller.runtime.leader import ApiLeaseStore, LeaderElectionConfig, LeaderElector
from fleetsched.controller.runtime.queue import Outcome, QueueClosed, QueuedBinding, SchedulingQueue
from fleetsched.controller.runtime.shard import (
    ApiMemberLeaseStore,
    MembershipChange,
    ShardConfig,
    ShardMembership,
)
from fleetsched.kube.client import ApiError, KubeClient

log = structlog.get_logger("fleetsched.controller")


# How long a worker that met a lapsed Lease waits before taking a key again.
NOT_LEADER_PAUSE = 0.1


class NotLeader(Exception):
    """Leadership was lost before a write; the key goes back to the queue."""


class NotOwner(Exception):
    """Sharded mode: the key's object is not (or no longer) this replica's; the key is dropped."""


# The queue key (and the UID it was popped with) the current worker task is processing.
_CURRENT: contextvars.ContextVar[tuple[Hashable, str | None] | None] = contextvars.ContextVar(
    "fleetsched_current_key", default=None
)


# Young-generation threshold while running: the caches hold many thousands of parsed JSON objects
# (no reference cycles among them), so the stdlib default of 700 allocations ran a collection every
# few watch events, and each full collection walked the whole cache.
GC_THRESHOLDS = (50_000, 20, 20)
_gc_started: dict[int, float] = {}
_gc_tuning = {"enabled": False}


def enable_gc_tuning() -> None:
    """Let ``settle_gc`` act (the commands do; library use and tests keep Python's defaults)."""
    _gc_tuning["enabled"] = True


def _time_gc(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _gc_started[0] = time.perf_counter()
    elif 0 in _gc_started:
        metrics.GC_SECONDS.labels(str(info.get("generation", ""))).inc(
            time.perf_counter() - _gc_started.pop(0)
        )


def settle_gc() -> None:
    """After the initial sync: what is cached now is long-lived, so move it out of the collector's
    sight (``gc.freeze``; reference counting still frees it when replaced), and collect rarely.
    The collector's time is exported as ``fleetsched_python_gc_seconds_total``."""
    if _time_gc not in gc.callbacks:
        gc.callbacks.append(_time_gc)
    if not _gc_tuning["enabled"]:
        return
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


# Longest wait between two initial sync attempts while the API server cannot be reached.
MAX_SYNC_RETRY = 30.0


def take_signals_back(stop: asyncio.Event) -> None:
    """A watcher may install its own SIGINT/SIGTERM handlers when it starts (kopf does); shutdown
    is ours to run (finish in-flight writes, release the Lease, then stop watching), so they go
    back to ``stop``."""
    if threading.current_thread() is not threading.main_thread():
        return
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)


class RuntimeConfig(Protocol):
    """What the runtime reads of a controller's configuration."""

    @property
    def workers(self) -> int: ...

    @property
    def leader_election(self) -> LeaderElectionConfig | None: ...

    @property
    def graceful_timeout(self) -> float: ...

    @property
    def sharding(self) -> ShardConfig | None: ...


class Reconciler(Protocol):
    """What a controller gives the runtime: how it syncs, watches and processes one key."""

    async def before_sync(self) -> None:
        """Checks against the API before the first LIST (retried with it)."""

    async def initial_sync(self) -> None:
        """LIST what the caches hold (the runtime sets ``synced`` once it returns)."""

    def watching(self, *, stop: asyncio.Event, ready: asyncio.Event) -> Awaitable[object]:
        """Watch the API from the end of the initial sync until ``stop``, setting ``ready`` once
        it watches."""
        ...

    async def process(self, entry: QueuedBinding) -> Outcome:
        """Handle one popped key; ``ensure_leader()`` before every write."""
        ...

    def on_leading(self, leading: bool) -> None:
        """Leadership started (or, without election, was implied) or stopped (a gauge)."""

    def after_outcome(self, entry: QueuedBinding, outcome: Outcome) -> None:
        """After each key is done, before ``queue.done`` (metrics)."""

    def on_done(self) -> None:
        """After ``queue.done`` (queue gauges)."""

    def on_stopped(self) -> None:
        """After the shutdown, before ``run`` returns (release what the controller owns)."""


class ShardedReconciler(Reconciler, Protocol):
    """A reconciler that can run sharded: which UID a key is sharded by, and what it could handle."""

    def uid_of(self, key: Hashable) -> str | None:
        """The UID the object behind ``key`` is sharded by (its ``metadata.uid``); None when the
        object is not cached (such a key is not owned)."""
        ...

    def shard_objects(self) -> Iterable[tuple[Hashable, str]]:
        """Every cached object the controller could handle, as (queue key, UID)."""
        ...

    def on_ownership_gained(self, keys: list[Hashable]) -> None:
        """Push the keys that became owned (their decision step says whether there is work)."""

    def on_not_owner(self, entry: QueuedBinding) -> None:
        """A key was dropped because another replica owns it (a metric)."""

    def on_shard_change(
        self, change: MembershipChange, *, owned: int, gained: int, lost: int, held: bool
    ) -> None:
        """The membership changed (gauges/counters); ``owned`` is the owned count now."""

    def on_owned_count(self, owned: int) -> None:
        """The owned count changed through the caches (a gauge)."""


@dataclass(eq=False)
class ControllerRuntime:
    """Runs one ``Reconciler``: see the module docstring."""

    reconciler: ShardedReconciler
    config: RuntimeConfig
    client: KubeClient
    queue: SchedulingQueue
    log: FilteringBoundLogger = log
    # the log field naming a queue key in ``worker_error``
    key_field: str = "key"
    events: EventRecorder | None = None
    # when given, the Events writer defers while this says the workers are busy
    events_busy: Callable[[], bool] | None = None
    synced: asyncio.Event = field(default_factory=asyncio.Event)
    elector: LeaderElector | None = None
    # sharded mode: this replica's member Lease and view (set by ``start_background``)
    membership: ShardMembership | None = None
    # the worker tasks busy with a key now
    in_flight: set[asyncio.Task[object]] = field(default_factory=set)
    # sharded: the keys of the objects this replica owns now (``note_owned``)
    _owned: set[Hashable] | None = None
    # keys that are this replica's by the members it sees but were dropped (or not pushed) while it
    # was not active for a moment (a renewal or LIST running late): pushed again once it is
    _parked: set[Hashable] | None = None

    # ---- leadership -----------------------------------------------------------------------------

    @property
    def sharding(self) -> ShardConfig | None:
        """The member Lease settings in sharded mode; None in the default (leader) mode."""
        return self.config.sharding

    @property
    def is_leader(self) -> bool:
        """May this replica write at all: it holds the leader Lease (or there is no election), or,
        sharded, its member Lease."""
        if self.sharding is not None:
            return self.membership is not None and self.membership.holds
        return self.elector is None or self.elector.is_leader

    def ready(self) -> tuple[bool, str]:
        credentials = getattr(self.client, "credentials", None)
        refused = credentials.health.problem() if credentials is not None else None
        if refused:
            return False, refused
        if not self.synced.is_set():
            return False, "caches not synced"
        if self.sharding is not None:
            problem = self.membership.problem if self.membership is not None else None
            if problem is not None:
                return False, problem
            if not self.is_leader:
                return False, "not holding its member Lease"
            return True, "ok"
        if not self.is_leader:
            return False, "not the leader"
        return True, "ok"

    def ensure_leader(self) -> None:
        """Before every write: NotLeader when the Lease lapsed; sharded, NotOwner when the key the
        worker is on is not this replica's now (or its member Lease lapsed)."""
        if self.sharding is not None:
            current = _CURRENT.get()
            if current is None:
                if not self.is_leader:
                    raise NotOwner
                return
            key, popped_uid = current
            if not self.owns_key(key, popped_uid):
                raise NotOwner
            return
        if not self.is_leader:
            raise NotLeader

    # ---- sharding -------------------------------------------------------------------------------

    def guard_worker_write(self) -> None:
        """The client's ``write_guard`` in sharded mode: a write sent by a worker is checked once
        more right before it leaves (after the rate limiter); the Leases' and Events' writes,
        made outside the workers, are not."""
        if _CURRENT.get() is not None:
            self.ensure_leader()

    def owns(self, uid: str | None) -> bool:
        """Whether this replica handles the object with ``uid`` (always, when not sharded)."""
        if self.sharding is None:
            return True
        if uid is None or self.membership is None:
            return False
        return self.membership.owns(uid)

    def owns_key(self, key: Hashable, fallback_uid: str | None = None) -> bool:
        """``owns`` for the object cached under ``key`` (``fallback_uid`` when it is not cached)."""
        if self.sharding is None:
            return True
        return self.owns(self.reconciler.uid_of(key) or fallback_uid)

    def note_owned(self, key: Hashable, uid: str | None) -> bool:
        """The controller cached (or updated) the object behind ``key``; True when it is owned
        (so the key may be pushed). Keeps the owned count (``on_owned_count``)."""
        if self.sharding is None:
            return True
        owned = self.owns(uid)
        if not owned:
            self._park_if_ours(key, uid)
        if self._owned is None:
            self._owned = set()
        before = len(self._owned)
        if owned:
            self._owned.add(key)
        else:
            self._owned.discard(key)
        if len(self._owned) != before:
            self.reconciler.on_owned_count(len(self._owned))
        return owned

    def forget_owned(self, key: Hashable) -> None:
        """The object behind ``key`` is gone (or no longer one the controller handles)."""
        if self._owned is not None and key in self._owned:
            self._owned.discard(key)
            self.reconciler.on_owned_count(len(self._owned))

    @property
    def owned_count(self) -> int:
        return len(self._owned or ())

    def is_owned(self, key: Hashable) -> bool:
        """Whether ``key`` is among the keys this replica owns now (sharded mode)."""
        return self._owned is not None and key in self._owned

    def owned_keys(self) -> Iterator[Hashable]:
        return iter(self._owned or ())

    def membership_changed(self, change: MembershipChange) -> None:
        """Recompute what is owned; push what became owned, forget from the queue what did not;
        one log line naming the members."""
        before = self._owned or set()
        now: set[Hashable] = set()
        if change.active:
            now = {key for key, uid in self.reconciler.shard_objects() if self.owns(uid)}
        gained = [key for key in now if key not in before]
        lost = [key for key in before if key not in now]
        self._owned = now
        for key in lost:
            self.queue.forget(key)
        if change.active and self._parked:
            gained_set = set(gained)
            gained += [key for key in self._parked if key in now and key not in gained_set]
            self._parked = None
        if gained:
            self.reconciler.on_ownership_gained(gained)
        held = self.membership is not None and self.membership.holds
        self.log.info(
            "shard_membership_changed",
            members=list(change.members),
            joined=list(change.joined),
            left=list(change.left),
            owned=len(now),
            active=change.active,
            member_lease_held=held,
        )
        self.reconciler.on_shard_change(change, owned=len(now), gained=len(gained), lost=len(lost), held=held)

    def _park_if_ours(self, key: Hashable, uid: str | None) -> None:
        """A key refused only because this replica is not active this instant (its view still names
        it the owner) is kept, to be pushed again when it is: no membership change may follow, so
        nothing else would push it."""
        membership = self.membership
        if membership is not None and uid is not None and membership.owner(uid) == membership.name:
            if self._parked is None:
                self._parked = set()
            self._parked.add(key)

    def push_parked(self) -> None:
        """Once active again: push the parked keys this replica owns; forget the others."""
        if not self._parked or self.membership is None or not self.membership.active:
            return
        parked, self._parked = self._parked, None
        keys = [key for key in parked if self.owns_key(key)]
        if keys:
            self.reconciler.on_ownership_gained(keys)

    async def repush_parked(self, period: float) -> None:
        while True:
            await asyncio.sleep(period)
            self.push_parked()

    def _drop_not_owned(self, entry: QueuedBinding) -> None:
        """Sharded: the key is another replica's (the owner has it in its own queue): forget it."""
        self._park_if_ours(entry.key, self.reconciler.uid_of(entry.key))
        _CURRENT.set(None)
        self.queue.done(entry, Outcome.DONE)
        self.queue.forget(entry.key)
        self.reconciler.on_not_owner(entry)
        self.reconciler.on_done()

    # ---- workers --------------------------------------------------------------------------------

    async def run_worker(self, index: int) -> None:
        while True:
            if self.elector is not None and not self.elector.leading.is_set():
                await self.elector.leading.wait()
            if self.membership is not None and not self.membership.active_event.is_set():
                await self.membership.active_event.wait()
            try:
                entry = await self.queue.pop()
            except QueueClosed:
                return
            uid: str | None = None
            if self.sharding is not None:
                uid = self.reconciler.uid_of(entry.key)
                if not self.owns(uid):
                    self._drop_not_owned(entry)
                    continue
            _CURRENT.set((entry.key, uid))
            task = asyncio.current_task()
            assert task is not None
            self.in_flight.add(task)
            try:
                outcome = await self.reconciler.process(entry)
            except NotOwner:
                self.in_flight.discard(task)
                self._drop_not_owned(entry)
                continue
            except NotLeader:
                self.queue.done(entry, Outcome.DONE)
                self.queue.push(entry.key)
                self.in_flight.discard(task)
                # The renewal is overdue but the elector has not run yet to say so (``leading`` is
                # still set): without a pause this worker would pop the key again at once, and
                # again, never yielding to the loop, so the elector would never run.
                await asyncio.sleep(NOT_LEADER_PAUSE)
                continue
            except Exception as exc:  # a bug must not kill the worker
                fields = {self.key_field: str(entry.key), "error": repr(exc)}
                self.log.exception("worker_error", **fields)
                outcome = Outcome.ERROR
            finally:
                self.in_flight.discard(task)
                _CURRENT.set(None)
            self.reconciler.after_outcome(entry, outcome)
            self.queue.done(entry, outcome)
            self.reconciler.on_done()

    # ---- lifecycle ------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> int:
        """Sync, start watching, election, workers; on ``stop`` finish in-flight work and exit.

        Returns 0 after a requested stop, 1 when watching ended on its own (the process should
        then exit non-zero and be restarted).
        """
        if self.events is None:
            self.events = EventRecorder(self.client, busy=self.events_busy)
        self.events.start()
        if not await self._sync_until_done(stop):
            await self.events.stop()
            return 0
        watch_stop = asyncio.Event()
        watch_ready = asyncio.Event()
        watch_task = asyncio.create_task(
            _awaited(self.reconciler.watching(stop=watch_stop, ready=watch_ready)), name="watching"
        )
        await asyncio.wait(
            [asyncio.ensure_future(watch_ready.wait()), watch_task], return_when=asyncio.FIRST_COMPLETED
        )
        take_signals_back(stop)
        if self.config.leader_election is None and self.sharding is None:
            self.reconciler.on_leading(True)
        tasks, workers = self.start_background(
            on_started_leading=lambda: self.reconciler.on_leading(True),
            on_stopped_leading=lambda: self.reconciler.on_leading(False),
        )
        stop_wait = asyncio.create_task(stop.wait())
        await asyncio.wait([stop_wait, watch_task], return_when=asyncio.FIRST_COMPLETED)
        watch_failed = watch_task.done() and not stop.is_set()
        if watch_failed:
            error = watch_task.exception() if not watch_task.cancelled() else None
            self.log.error("watching_stopped", error=repr(error))
        await self.shutdown(
            workers=workers, tasks=tasks, watch_stop=watch_stop, watch_task=watch_task, stop_wait=stop_wait
        )
        self.reconciler.on_stopped()
        return 1 if watch_failed else 0

    async def _sync_until_done(self, stop: asyncio.Event) -> bool:
        """``initial_sync``, retried with backoff while the API server cannot be reached (waited
        for, not a crash loop); False when ``stop`` came first."""
        delay = 1.0
        while True:
            try:
                await self.reconciler.before_sync()
                await self.reconciler.initial_sync()
                self.synced.set()
                return True
            except (ApiError, OSError, TimeoutError) as exc:
                self.log.warning("initial_sync_failed", error=str(exc), retry_in=delay)
                try:
                    await asyncio.wait_for(stop.wait(), delay)
                    return False
                except TimeoutError:
                    delay = min(delay * 2, MAX_SYNC_RETRY)

    def start_background(
        self,
        *,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
    ) -> tuple[list[asyncio.Task[Any]], list[asyncio.Task[Any]]]:
        """Start the queue's flushers, the leader election (when configured) and the workers;
        returns (background tasks, worker tasks)."""
        election = self.config.leader_election
        sharding = self.sharding
        if election is not None and sharding is not None:
            raise ValueError("leader election and sharded mode are exclusive (one Lease mode at a time)")
        tasks: list[asyncio.Task[Any]] = [
            asyncio.create_task(self.queue.run_flushers(), name="queue-flushers")
        ]
        if sharding is not None:
            self.membership = ShardMembership(
                config=sharding,
                store=ApiMemberLeaseStore(self.client, sharding.namespace, group=sharding.group),
                on_change=self.membership_changed,
            )
            # a worker's write waiting for the rate limiter (or paused) is re-checked as it leaves
            self.client.write_guard = self.guard_worker_write
            tasks.append(asyncio.create_task(self.membership.run(), name="shard-membership"))
            tasks.append(
                asyncio.create_task(self.repush_parked(sharding.retry_period), name="shard-repush-parked")
            )
        if election is not None:
            store = ApiLeaseStore(self.client, election.namespace, election.name)
            kwargs: dict[str, Any] = {}
            if on_started_leading is not None:
                kwargs["on_started_leading"] = on_started_leading
            if on_stopped_leading is not None:
                kwargs["on_stopped_leading"] = on_stopped_leading
            self.elector = LeaderElector(config=election, store=store, **kwargs)
            tasks.append(asyncio.create_task(self.elector.run(), name="leader-election"))
        workers = [
            asyncio.create_task(self.run_worker(i), name=f"worker-{i}") for i in range(self.config.workers)
        ]
        return tasks, workers

    async def shutdown(
        self,
        *,
        workers: list[asyncio.Task[Any]],
        tasks: list[asyncio.Task[Any]],
        watch_stop: asyncio.Event,
        watch_task: asyncio.Task[Any],
        stop_wait: asyncio.Task[Any],
    ) -> None:
        """Finish in-flight writes (no new keys are handed out, busy workers complete their key),
        flush Events, release the Lease, stop watching and the background tasks."""
        self.log.info("shutting_down", in_flight=len(self.in_flight))
        self.queue.close()
        busy = [task for task in workers if task in self.in_flight]
        for task in workers:
            if task not in self.in_flight:
                task.cancel()  # idle, or a standby waiting for leadership
        if busy:
            await asyncio.wait(busy, timeout=self.config.graceful_timeout)
        for task in workers:
            task.cancel()
        if self.events is not None:
            await self.events.flush(2.0)
        if self.elector is not None:
            await self.elector.release()
        if self.membership is not None:
            for task in tasks:
                if task.get_name() == "shard-membership":
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
            await self.membership.release()
        for task in tasks:
            task.cancel()
        watch_stop.set()
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
            await asyncio.wait_for(watch_task, 10)
        if self.events is not None:
            await self.events.stop()
        stop_wait.cancel()
        for task in [*tasks, *workers]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def _awaited(watching: Awaitable[object]) -> object:
    return await watching
