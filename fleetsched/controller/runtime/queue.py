"""The scheduling queue: which binding a worker takes next, and when a failed one comes back.

Reproduces karmada-scheduler's priority queue (pkg/scheduler/internal/queue):

* activeQ is ordered by ``spec.schedulePriority.priority`` descending, then by the time the key
  entered the queue (FIFO). Pushing a key that is already waiting is a no-op; pushing a key that
  a worker is processing marks it dirty, and it is re-queued exactly once when that worker is done.
* A push from an event creates a fresh entry (attempts 0) and takes the key out of the backoff
  and unschedulable sets.
* After processing: success (or an ignored error) forgets the key; an unschedulable error parks it
  in the unschedulable set; any other error puts it in backoffQ for ``min(1s * 2^(n-1), 10s)``
  after the entry's timestamp, ``n`` being the number of attempts.
* A flusher moves expired backoff entries to activeQ every second; another moves unschedulable
  entries older than five minutes every 30 seconds. Cluster changes push the affected keys, which
  takes them out of the unschedulable set at once.
* Queueing hints (kube-scheduler's KEP-4247, ``scheduler/framework/hints.py``): a key parked as
  unschedulable keeps its rejectors' hint (``note_rejection``); ``on_event`` moves only the keys
  whose hint answers Queue for the event, to backoff while their backoff lasts, else to activeQ.
  Events that arrive while a worker holds a key are applied when it parks. The five-minute flush
  stays the backstop.
* ``push_debounced`` (``--binding-update-debounce``): the spec updates of one key within the window
  are pushed once, when it ends.

Owns no Kubernetes objects and does no I/O: keys and priorities in, keys out. Keys are
``QueueKey`` values (kind, namespace, name), never strings taken apart again; the queue itself
only needs them hashable. Time is a parameter (``clock``) so tests control it.

An optional ``observer`` (a ``QueueObserver``; ``metrics.instrument_queue`` gives it client-go's
``workqueue_*`` series) hears what client-go's workqueue reports: a key entering activeQ (an add),
a key taken by a worker (with how long it waited), a key done (with how long it was worked on), a
key put back to retry (backoff or unschedulable). ``in_progress`` is what the unfinished-work
gauges read when scraped.

A profile's QueueSort plugin (``less``, when it is not the default PrioritySort) never runs on the
event loop: ``_PluginOrder`` keeps activeQ in the plugin's order in a thread of its own, and the
loop keeps Karmada's order beside it (priority descending, then the time the key entered the
queue), which needs no plugin. ``push`` hands the entry to that thread and returns; ``pop`` waits
for the thread's answer without blocking the loop, so ``/healthz``, ``/readyz``, the Lease renewal
and the watches go on however long ``less`` takes. A comparison has ``sort_budget`` seconds (one
second by default); one that returns later, or is still running when a pop looks, is an overrun
of the plugin's ``PluginHealth`` (at QueueSort), which marks it broken at the first one: the queue
gives the plugin's order up and hands entries out in Karmada's order from then on. Once the stuck
comparison has returned and the cool-down (``containment.COOL_DOWN``) has passed, the plugin's
order is rebuilt from the waiting entries; its first comparison is the probe that ends the broken
state, or starts another cool-down. A plugin that raises answers Karmada's order for that
comparison (``Framework.less``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import enum
import hashlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from fleetsched.scheduler.framework.containment import Call, PluginError, PluginHealth, escapes
from fleetsched.scheduler.framework.hints import QueueEvent, QueueingHint
from fleetsched.scheduler.framework.interface import QueuedBindingInfo

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
UNSCHEDULABLE_TIMEOUT = 300.0
BACKOFF_FLUSH_PERIOD = 1.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0
# Karmada's rate-limited work queue (gate PriorityBasedScheduling off): its per-item exponential
# retry delay (--rate-limiter-base-delay, --rate-limiter-max-delay defaults).
LEGACY_INITIAL_BACKOFF = 0.005
LEGACY_MAX_BACKOFF = 1000.0
# Seconds one comparison of a QueueSort plugin may take before the plugin is marked broken.
SORT_BUDGET = 1.0
# How often a pop waiting for the plugin's order looks for a comparison stuck past its budget.
SORT_POLL = 0.05
# The extension point a QueueSort plugin's overruns are counted at (metrics, log lines).
QUEUE_SORT_POINT = "QueueSort"
# Events remembered for a key while a worker holds it (applied if it then parks as unschedulable);
# past this many the key is requeued whatever its rejectors (kube-scheduler's in-flight events).
MAX_IN_FLIGHT_EVENTS = 64

# Whether an event can help a parked binding: the hint of its rejectors (hints.requeue_hint).
Hint = Callable[[QueueEvent], QueueingHint]


@dataclass(frozen=True, slots=True)
class QueueKey:
    """What a queue entry names: one object by kind, namespace ("" when cluster-scoped) and name.

    ``kind`` is the object's kind (``ResourceBinding``, ``PropagationPolicy``, ...) or, for the
    policy controller's resource templates, the resource's ``plural.group`` name.
    """

    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, kind: str, object_key: str) -> QueueKey:
        """From a cache key: ``namespace/name``, or ``name`` for a cluster-scoped object."""
        namespace, _, name = object_key.rpartition("/")
        return cls(kind, namespace, name)

    @property
    def object_key(self) -> str:
        """The cache key: ``namespace/name``, or ``name`` when cluster-scoped."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def shard_hash(self) -> int:
        """A 64-bit hash that is the same in every process and every run (unlike ``hash()``,
        which is salted per process): blake2b of the canonical bytes ``kind\0namespace\0name``."""
        canonical = f"{self.kind}\0{self.namespace}\0{self.name}".encode()
        return int.from_bytes(hashlib.blake2b(canonical, digest_size=8).digest(), "big")

    def __str__(self) -> str:
        return f"{self.kind}:{self.object_key}"


class Outcome(enum.Enum):
    """What a worker reports for a processed key."""

    DONE = "done"  # success, an ignored error (a FitError), or nothing to do: forget the key
    UNSCHEDULABLE = "unschedulable"  # the error chain holds an UnschedulableError
    ERROR = "error"  # anything else: retry with backoff


@dataclass(slots=True)
class QueuedBinding:
    """One queue entry. ``timestamp`` is when the key last entered activeQ."""

    key: Hashable  # a QueueKey in the controllers
    priority: int
    timestamp: float
    attempts: int = 0
    # when a worker took it (the queue's clock); 0 while it waits
    started: float = 0.0


@dataclass(slots=True)
class _HeapItem:
    sort_key: tuple[int, float, int]  # Karmada's order: (-priority, timestamp, sequence)
    entry: QueuedBinding
    valid: bool = True

    def __lt__(self, other: _HeapItem) -> bool:
        return self.sort_key < other.sort_key

    def view(self) -> QueuedBindingInfo:
        e = self.entry
        return QueuedBindingInfo(e.key, e.priority, e.timestamp, e.attempts)


_Answer = concurrent.futures.Future["_HeapItem | None"]
# What the loop sends the plugin's order: an entry to add, or a pop to answer.
_Command = tuple["_HeapItem | None", "_Answer | None"]


class _GiveUp(Exception):
    """The plugin's order is given up: a comparison overran, the plugin is broken, or the loop
    stopped waiting for a stuck comparison."""


class _Sorted:
    """An entry in the plugin's heap: ordered by the plugin's ``less`` (through ``_PluginOrder``)."""

    __slots__ = ("item", "order")

    def __init__(self, item: _HeapItem, order: _PluginOrder) -> None:
        self.item = item
        self.order = order

    def __lt__(self, other: _Sorted) -> bool:
        a, b = self.item, other.item
        if self.order.compare(a, b):
            return True
        if self.order.compare(b, a):
            return False
        return a.sort_key[2] < b.sort_key[2]  # equal for the plugin: first pushed first


class _PluginOrder:
    """activeQ in a QueueSort plugin's order, kept by one thread of its own (started when there is
    work, gone after ``idle`` seconds without). Commands are taken in the order the loop gave them,
    so a pop sees every push before it. Any comparison over ``budget`` ends it for good (``dead``);
    the queue then starts a new one after the plugin's cool-down."""

    def __init__(self, less: Callable[[QueuedBindingInfo, QueuedBindingInfo], bool], health: PluginHealth,
                 plugin: str, budget: float, clock: Callable[[], float], *, idle: float = 5.0) -> None:
        self.less = less
        self.health = health
        self.plugin = plugin
        self.budget = budget
        self.clock = clock
        self.idle = idle
        self.dead = False
        self.died_at = 0.0  # the queue's clock when it died
        self._heap: list[_Sorted] = []
        self._commands: list[_Command] = []
        self._asked: list[_Answer] = []
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._running = False
        self._stopped = False
        # the comparison in progress: its call and when it started (the queue's clock)
        self._comparing: Call | None = None
        self._since = 0.0

    # -- the loop's side -----------------------------------------------------------------------

    def add(self, items: Iterable[_HeapItem]) -> None:
        self._send([(item, None) for item in items])

    def request_pop(self) -> _Answer:
        """The best waiting item in the plugin's order (None: none, or the order died)."""
        future: _Answer = concurrent.futures.Future()
        with self._lock:
            # the pops not answered yet, wherever they are (answered None if the order dies)
            self._asked = [f for f in self._asked if not f.done()]
            self._asked.append(future)
        if not self._send([(None, future)]):
            _answer(future, None)
        return future

    def _send(self, commands: list[_Command]) -> bool:
        with self._lock:
            if self.dead or self._stopped:
                return False
            self._commands.extend(commands)
            if self._running:
                self._wake.notify()
            else:
                self._running = True
                threading.Thread(target=self._run, name="queue-sort", daemon=True).start()
        return True

    def check_stuck(self) -> bool:
        """Whether a comparison has run past the budget; if so the plugin is told (an overrun that
        marks it broken), the order dies and every waiting pop is answered None."""
        with self._lock:
            call = self._comparing
            if call is None or self.clock() - self._since <= self.budget:
                return self.dead
            self._comparing = None  # the thread counts its return as the stuck call's
            # told under the lock: the thread's ``returned`` comes after it
            call.health.stuck(call)
        self._die()
        return True

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._wake.notify()
        self._die()

    def _die(self) -> None:
        with self._lock:
            if not self.dead:
                self.died_at = self.clock()
            self.dead = True
            pending, self._asked = self._asked, []
            self._commands.clear()
            self._wake.notify()
        for future in pending:
            _answer(future, None)

    # -- the thread's side ---------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._commands and not self.dead:
                    self._wake.wait(self.idle)
                if self.dead or not self._commands:
                    self._running = False
                    if self.dead:
                        self._heap.clear()
                    return
                commands, self._commands = self._commands, []
            try:
                self._apply(commands)
            except _GiveUp:
                for _, future in commands:
                    if future is not None:
                        _answer(future, None)
                self._die()

    def _apply(self, commands: list[_Command]) -> None:
        heap = self._heap
        adds: list[_Sorted] = []
        for item, future in commands:
            if item is not None:
                adds.append(_Sorted(item, self))
                continue
            self._insert(adds)  # the pushes sent before this pop
            adds = []
            best = None
            while heap:
                candidate = heapq.heappop(heap).item
                if candidate.valid:
                    best = candidate
                    break
            if future is not None and not _answer(future, best) and best is not None:
                heapq.heappush(heap, _Sorted(best, self))  # nobody waits for it any more: it stays
        self._insert(adds)

    def _insert(self, adds: list[_Sorted]) -> None:
        heap = self._heap
        if len(adds) > max(len(heap), 8):
            heap.extend(adds)  # many at once (a relist, a rebuild): O(n) comparisons, not O(n log n)
            heapq.heapify(heap)
            return
        for add in adds:
            heapq.heappush(heap, add)

    def compare(self, a: _HeapItem, b: _HeapItem) -> bool:
        """The plugin's ``less(a, b)``, timed against the budget; raises ``_GiveUp`` when it overran,
        is broken, or this order died meanwhile."""
        if self.dead:
            raise _GiveUp
        try:
            call = self.health.admit(self.plugin, QUEUE_SORT_POINT)
        except PluginError:
            raise _GiveUp from None
        with self._lock:
            self._comparing = call
            self._since = started = self.clock()
        try:
            answer = bool(self.less(a.view(), b.view()))
        except BaseException as e:  # Framework.less contains the plugin's; this is the last line
            if escapes(e):
                raise
            answer = a.sort_key < b.sort_key
        with self._lock:
            abandoned = self._comparing is not call
            self._comparing = None
            took = self.clock() - started
        overran = abandoned or took > self.budget
        self.health.returned(call, overran=overran)
        if overran:
            raise _GiveUp
        return answer


def _answer(future: _Answer, item: _HeapItem | None) -> bool:
    """Give ``future`` its answer; False when nobody waits for it any more (cancelled)."""
    try:
        future.set_result(item)
    except concurrent.futures.InvalidStateError:
        return False
    return True


@dataclass(slots=True)
class QueueSizes:
    active: int
    backoff: int
    unschedulable: int
    processing: int


class QueueObserver(Protocol):
    """What a queue reports as it works, in client-go's workqueue terms (see the module docstring)."""

    def added(self) -> None: ...

    def taken(self, waited: float) -> None: ...

    def finished(self, worked: float) -> None: ...

    def retried(self) -> None: ...


class HintObserver(Protocol):
    """What the queueing hints report: each hint asked (by event and answer) and, for a key an
    event moved, the time from that event to the key's next decision."""

    def hinted(self, event: str, hint: QueueingHint) -> None: ...

    def decided(self, event: str, seconds: float) -> None: ...


@dataclass
class SchedulingQueue:
    """Priority queue with backoff and an unschedulable set; several workers may pop at once."""

    clock: Callable[[], float] = time.monotonic
    initial_backoff: float = INITIAL_BACKOFF
    max_backoff: float = MAX_BACKOFF
    unschedulable_timeout: float = UNSCHEDULABLE_TIMEOUT
    # The profile's QueueSort plugin (``Framework.less``) when it is not the default PrioritySort.
    less: Callable[[QueuedBindingInfo, QueuedBindingInfo], bool] | None = None
    # Hears adds, takes, dones and retries (the workqueue_* metrics); None: nobody listens.
    observer: QueueObserver | None = None
    # Karmada's gate PriorityBasedScheduling. Off, the queue is Karmada's legacy rate-limited work
    # queue (``legacy``): first in, first out whatever the priority, no unschedulable set (every
    # failure is retried with the per-item backoff), no QueueSort.
    priority_based: bool = True
    # One comparison's time budget, and the plugin and profile its overruns are counted for.
    sort_budget: float = SORT_BUDGET
    sort_plugin: str = QUEUE_SORT_POINT
    sort_profile: str = ""

    _active: list[_HeapItem] = field(default_factory=list)
    _active_index: dict[Hashable, _HeapItem] = field(default_factory=dict)
    _backoff: dict[Hashable, QueuedBinding] = field(default_factory=dict)
    _unschedulable: dict[Hashable, QueuedBinding] = field(default_factory=dict)
    _processing: dict[Hashable, QueuedBinding] = field(default_factory=dict)
    # key -> priority of the latest push that arrived while the key was being processed
    _dirty: dict[Hashable, int] = field(default_factory=dict)
    _sequence: itertools.count[int] = field(default_factory=itertools.count)
    _wakeup: asyncio.Event | None = None
    _closed: bool = False
    # activeQ in the QueueSort plugin's order (off the loop), and the plugin's health at QueueSort
    _order: _PluginOrder | None = None
    _sort_health: PluginHealth | None = None

    @classmethod
    def legacy(cls, **kwargs: object) -> SchedulingQueue:
        """Karmada's queue with PriorityBasedScheduling off: FIFO, failures retried after
        ``5ms * 2^(n-1)`` up to 1,000 s (its rate limiter's defaults)."""
        return cls(  # type: ignore[arg-type]
            priority_based=False, initial_backoff=LEGACY_INITIAL_BACKOFF, max_backoff=LEGACY_MAX_BACKOFF,
            **kwargs,
        )
    # Queueing hints (KEP-4247): hears hints asked and event-to-decision times; None: nobody listens.
    hint_observer: HintObserver | None = None
    # key -> its rejectors' hint, from its last failed attempt (``note_rejection``)
    _hints: dict[Hashable, Hint] = field(default_factory=dict)
    # key -> events that arrived while a worker held it (None: too many, requeue it anyway)
    _in_flight_events: dict[Hashable, list[QueueEvent] | None] = field(default_factory=dict)
    # key -> (queue time of the event that moved it, the event's label): the decision histogram
    _moved_by: dict[Hashable, tuple[float, str]] = field(default_factory=dict)
    # Debounced spec updates (--binding-update-debounce): key -> (due time, priority)
    _debounced: dict[Hashable, tuple[float, int]] = field(default_factory=dict)

    # -- producers ------------------------------------------------------------------------------

    def push(self, key: Hashable, priority: int = 0) -> None:
        """Enqueue ``key`` because of an event: a fresh entry, out of backoff/unschedulable."""
        if self._closed:
            return
        if not self.priority_based:
            priority = 0  # FIFO: the order keys arrived in
        if key in self._processing:
            self._dirty[key] = priority
            return
        self._backoff.pop(key, None)
        if self._unschedulable.pop(key, None) is not None:
            self._hints.pop(key, None)
        if key in self._active_index:
            return  # already waiting: a no-op (§3.2)
        self._add_active(QueuedBinding(key, priority, self.clock(), 0))

    def _add_active(self, entry: QueuedBinding) -> None:
        item = _HeapItem((-entry.priority, entry.timestamp, next(self._sequence)), entry)
        self._active_index[entry.key] = item
        heapq.heappush(self._active, item)
        order, rebuilt = self._plugin_order()
        if order is not None and not rebuilt:
            order.add((item,))
        if self.observer is not None:
            self.observer.added()
        if self._wakeup is not None:
            self._wakeup.set()

    # -- consumers ------------------------------------------------------------------------------

    def _plugin_order(self) -> tuple[_PluginOrder | None, bool]:
        """The plugin's order when it is in use (None: no plugin, or given up and still cooling
        down), and whether it was (re)built just now from every waiting entry."""
        less = self.less
        if less is None or not self.priority_based:  # Karmada's legacy queue has no QueueSort
            return None, False
        order = self._order
        if order is not None and order.less is less:
            if not order.dead:
                return order, False
            health = order.health
            if self.clock() - order.died_at < health.cool_down:
                return None, False
        health = self._sort_health
        if health is None:
            # one overrun marks it broken: one stuck comparison holds the whole queue's order
            health = PluginHealth(self.sort_profile, overruns_to_break=1, clock=self.clock)
            self._sort_health = health
        if order is not None:
            order.stop()
        order = self._order = _PluginOrder(less, health, self.sort_plugin, self.sort_budget, self.clock)
        order.add(self._active_index.values())
        return order, True

    def pop_nowait(self) -> QueuedBinding | None:
        """Take the highest-priority waiting entry, or None when activeQ is empty. With a QueueSort
        plugin this waits (blocking) for the plugin's order, at most a comparison's budget past the
        stuck one: for tests and tools; workers use ``pop``."""
        order = self._plugin_order()[0] if self._active_index else None
        if order is not None:
            future = order.request_pop()
            while True:
                try:
                    item = future.result(timeout=SORT_POLL)
                    break
                except TimeoutError:
                    order.check_stuck()
            taken = self._take(item) if item is not None else None
            if taken is not None:
                return taken
        return self._pop_karmada()

    def _pop_karmada(self) -> QueuedBinding | None:
        """Take the first waiting entry in Karmada's order (priority, then first in first out)."""
        while self._active:
            item = heapq.heappop(self._active)
            if item.valid:
                return self._take(item)
        return None

    def _take(self, item: _HeapItem) -> QueuedBinding | None:
        """Hand ``item`` to a worker; None when it is no longer waiting (forgotten, taken)."""
        entry = item.entry
        if not item.valid or self._active_index.get(entry.key) is not item:
            return None
        item.valid = False
        del self._active_index[entry.key]
        if len(self._active) > 64 and len(self._active) > 2 * len(self._active_index):
            # taken in the plugin's order, they are still in Karmada's heap: drop them now and then
            self._active = [i for i in self._active if i.valid]
            heapq.heapify(self._active)
        entry.attempts += 1
        self._processing[entry.key] = entry
        entry.started = self.clock()
        self._in_flight_events[entry.key] = []
        if self.observer is not None:
            self.observer.taken(entry.started - entry.timestamp)
        return entry

    async def pop(self) -> QueuedBinding:
        """Wait for an entry; raises ``QueueClosed`` once the queue is closed."""
        if self._wakeup is None:
            self._wakeup = asyncio.Event()
        while True:
            if self._closed:
                raise QueueClosed
            order = self._plugin_order()[0] if self._active_index else None
            if order is not None:
                waited = asyncio.wrap_future(order.request_pop())
                try:
                    while not (await asyncio.wait({waited}, timeout=SORT_POLL))[0]:
                        order.check_stuck()
                except asyncio.CancelledError:
                    waited.cancel()  # the plugin's order keeps the entry it would have answered
                    raise
                item = waited.result()
                if self._closed:
                    raise QueueClosed
                taken = self._take(item) if item is not None else None
                if taken is not None:
                    return taken
                if item is not None and not order.dead:
                    continue  # forgotten while the answer came: ask again
            entry = self._pop_karmada()
            if entry is not None:
                return entry
            self._wakeup.clear()
            await self._wakeup.wait()

    def done(self, entry: QueuedBinding, outcome: Outcome) -> None:
        """Report how processing ``entry`` ended (see the module docstring)."""
        if self._processing.pop(entry.key, None) is not None and self.observer is not None:
            self.observer.finished(self.clock() - entry.started)
        in_flight = self._in_flight_events.pop(entry.key, [])
        self._observe_decided(entry.key)
        dirty_priority = self._dirty.pop(entry.key, None)
        if dirty_priority is not None:
            self.push(entry.key, dirty_priority)
        if outcome is not Outcome.UNSCHEDULABLE or not self.priority_based:
            self._hints.pop(entry.key, None)  # (Karmada's legacy queue has no unschedulable set)
        if outcome is Outcome.DONE or self._closed:
            return
        waiting = entry.key in self._active_index
        if outcome is Outcome.UNSCHEDULABLE and self.priority_based:
            if not waiting and entry.key not in self._backoff:
                self._unschedulable[entry.key] = entry
                self._retried()
                if in_flight is None:
                    self._move(entry.key, "InFlightEvents")
                else:
                    for event in in_flight:  # what happened meanwhile may already help
                        if self._hint_moves(entry.key, event):
                            break
            else:
                self._hints.pop(entry.key, None)
        elif not waiting and entry.key not in self._unschedulable:
            self._backoff[entry.key] = entry
            self._retried()

    def _retried(self) -> None:
        if self.observer is not None:
            self.observer.retried()

    # -- flushers -------------------------------------------------------------------------------

    def backoff_duration(self, entry: QueuedBinding) -> float:
        exponent = max(entry.attempts - 1, 0)
        # 2**exponent grows without bound; cap before it can overflow a float.
        if exponent >= 32:
            return self.max_backoff
        return min(self.initial_backoff * (2**exponent), self.max_backoff)

    def flush_backoff(self) -> int:
        """Move entries whose backoff has expired to activeQ; returns how many moved."""
        now = self.clock()
        expired = [e for e in self._backoff.values() if e.timestamp + self.backoff_duration(e) <= now]
        expired.sort(key=lambda e: (-e.priority, e.timestamp))
        for entry in expired:
            del self._backoff[entry.key]
            self._requeue(entry)
        return len(expired)

    def flush_unschedulable(self) -> int:
        """Move unschedulable entries older than the timeout to activeQ; returns how many moved."""
        now = self.clock()
        expired = [e for e in self._unschedulable.values() if now - e.timestamp >= self.unschedulable_timeout]
        expired.sort(key=lambda e: (-e.priority, e.timestamp))
        for entry in expired:
            del self._unschedulable[entry.key]
            self._hints.pop(entry.key, None)
            self._requeue(entry)
        return len(expired)

    def _requeue(self, entry: QueuedBinding) -> None:
        # Keeps the attempt count (so backoff keeps growing) and restarts the timestamp.
        if entry.key in self._active_index or entry.key in self._processing:
            return
        self._add_active(QueuedBinding(entry.key, entry.priority, self.clock(), entry.attempts))

    async def run_flushers(
        self,
        *,
        backoff_period: float = BACKOFF_FLUSH_PERIOD,
        unschedulable_period: float = UNSCHEDULABLE_FLUSH_PERIOD,
    ) -> None:
        """Run both flushers until cancelled or closed."""
        last_unschedulable = self.clock()
        while not self._closed:
            await asyncio.sleep(backoff_period)
            self.flush_backoff()
            self.flush_debounced()
            if self.clock() - last_unschedulable >= unschedulable_period:
                last_unschedulable = self.clock()
                self.flush_unschedulable()

    # -- bookkeeping ----------------------------------------------------------------------------

    def forget(self, key: Hashable) -> None:
        """Drop every trace of ``key`` (the binding was deleted)."""
        item = self._active_index.pop(key, None)
        if item is not None:
            item.valid = False
        self._backoff.pop(key, None)
        self._unschedulable.pop(key, None)
        self._dirty.pop(key, None)
        self._hints.pop(key, None)
        self._moved_by.pop(key, None)
        self._debounced.pop(key, None)

    def close(self) -> None:
        """Stop handing out entries; waiting ``pop()`` calls raise ``QueueClosed``."""
        self._closed = True
        if self._order is not None:
            self._order.stop()
        if self._wakeup is not None:
            self._wakeup.set()

    def sizes(self) -> QueueSizes:
        return QueueSizes(
            active=len(self._active_index),
            backoff=len(self._backoff),
            unschedulable=len(self._unschedulable),
            processing=len(self._processing),
        )

    def in_progress(self) -> tuple[float, float]:
        """Seconds of work started and not yet done, summed over the keys being processed, and the
        longest of them (client-go's unfinished-work and longest-running-processor gauges)."""
        now = self.clock()
        ages = [now - entry.started for entry in self._processing.values()]
        return sum(ages), max(ages, default=0.0)

    def working(self) -> bool:
        """Whether anything is waiting in the active queue or being processed (cheaper than
        ``sizes``, for the Event senders' check before each Event)."""
        return bool(self._active_index) or bool(self._processing)

    def __contains__(self, key: object) -> bool:
        return (
            key in self._active_index
            or key in self._backoff
            or key in self._unschedulable
            or key in self._processing
        )


    # -- queueing hints (KEP-4247) ----------------------------------------------------------------

    def note_rejection(self, key: Hashable, hint: Hint) -> None:
        """What can help ``key``, whose attempt (being processed) just failed as unschedulable: kept
        while it waits in the unschedulable set."""
        self._hints[key] = hint

    def on_event(self, event: QueueEvent) -> int:
        """An event that may help waiting bindings: each unschedulable key whose hint answers QUEUE
        goes back (to backoff while its backoff lasts, else to activeQ); keys being processed
        remember it. Returns how many keys moved."""
        if self._closed:
            return 0
        for key, seen in self._in_flight_events.items():
            if seen is not None:
                if len(seen) >= MAX_IN_FLIGHT_EVENTS:
                    self._in_flight_events[key] = None
                else:
                    seen.append(event)
        moved = 0
        for key in list(self._unschedulable):
            if self._hint_moves(key, event):
                moved += 1
        return moved

    def _hint_moves(self, key: Hashable, event: QueueEvent) -> bool:
        hint = self._hints.get(key)
        answer = QueueingHint.QUEUE if hint is None else hint(event)
        label = event.kind.label
        if self.hint_observer is not None:
            self.hint_observer.hinted(label, answer)
        if answer is QueueingHint.SKIP:
            return False
        self._move(key, label)
        return True

    def _move(self, key: Hashable, label: str) -> None:
        """Out of the unschedulable set: to backoff while the entry's backoff lasts, else activeQ."""
        entry = self._unschedulable.pop(key, None)
        if entry is None:
            return
        self._hints.pop(key, None)
        now = self.clock()
        self._moved_by[key] = (now, label)
        if entry.timestamp + self.backoff_duration(entry) > now:
            self._backoff[key] = entry
        else:
            self._requeue(entry)

    def _observe_decided(self, key: Hashable) -> None:
        moved = self._moved_by.pop(key, None)
        if moved is not None and self.hint_observer is not None:
            self.hint_observer.decided(moved[1], self.clock() - moved[0])

    def waiting_on_events(self) -> bool:
        """Whether an event could move anything: a key waits as unschedulable or is being processed
        (the event handlers skip working out events otherwise)."""
        return bool(self._unschedulable) or bool(self._in_flight_events)

    def hint_pending(self, key: Hashable) -> bool:
        """Whether ``key`` waits in the unschedulable set with its rejectors' hint (for tests)."""
        return key in self._unschedulable and key in self._hints

    # -- debounced updates (--binding-update-debounce) -------------------------------------------

    def push_debounced(self, key: Hashable, priority: int, window: float) -> None:
        """A spec update of ``key``: pushed once ``window`` seconds after the first update of a
        burst, whatever more updates arrive meanwhile (0: at once, as ``push``)."""
        if window <= 0:
            self.push(key, priority)
            return
        if self._closed:
            return
        pending = self._debounced.get(key)
        due = pending[0] if pending is not None else self.clock() + window
        self._debounced[key] = (due, priority)  # the latest priority
        if pending is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return  # no loop (tests): flush_debounced is called by hand, or by run_flushers
            loop.call_later(window, self.flush_debounced)

    def flush_debounced(self) -> int:
        """Push the debounced keys whose window has passed; returns how many."""
        now = self.clock()
        due = [(key, priority) for key, (at, priority) in self._debounced.items() if at <= now]
        for key, priority in due:
            del self._debounced[key]
            self.push(key, priority)
        return len(due)

    def debouncing(self, key: Hashable) -> bool:
        return key in self._debounced


class QueueClosed(Exception):
    """The queue was closed while a worker waited for an entry."""
