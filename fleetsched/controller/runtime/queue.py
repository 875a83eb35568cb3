"""The scheduling queue: which binding a worker takes next, and when a failed one comes back.

Reproduces karmada-scheduler's priority queue (spec/scheduler.md §3.2):

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

Owns no Kubernetes objects and does no I/O: keys and priorities in, keys out. Keys are
``QueueKey`` values (kind, namespace, name), never strings taken apart again; the queue itself
only needs them hashable. Time is a parameter (``clock``) so tests control it.

An optional ``observer`` (a ``QueueObserver``; ``metrics.instrument_queue`` gives it client-go's
``workqueue_*`` series) hears what client-go's workqueue reports: a key entering activeQ (an add),
a key taken by a worker (with how long it waited), a key done (with how long it was worked on), a
key put back to retry (backoff or unschedulable). ``in_progress`` is what the unfinished-work
gauges read when scraped.
"""

from __future__ import annotations

import asyncio
import enum
import hashlib
import heapq
import itertools
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Protocol

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
    sort_key: tuple[int, float, int]
    entry: QueuedBinding
    valid: bool = True
    # A profile's QueueSort ``less``; None is Karmada's order, the sort key's.
    less: Callable[[QueuedBindingInfo, QueuedBindingInfo], bool] | None = None

    def __lt__(self, other: _HeapItem) -> bool:
        less = self.less
        if less is None:
            return self.sort_key < other.sort_key
        a, b = self.view(), other.view()
        if less(a, b):
            return True
        if less(b, a):
            return False
        return self.sort_key[2] < other.sort_key[2]  # equal for the plugin: first pushed first

    def view(self) -> QueuedBindingInfo:
        e = self.entry
        return QueuedBindingInfo(e.key, e.priority, e.timestamp, e.attempts)


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

    @classmethod
    def legacy(cls, **kwargs: object) -> SchedulingQueue:
        """Karmada's queue with PriorityBasedScheduling off: FIFO, failures retried after
        ``5ms * 2^(n-1)`` up to 1,000 s (its rate limiter's defaults)."""
        return cls(  # type: ignore[arg-type]
            priority_based=False, initial_backoff=LEGACY_INITIAL_BACKOFF, max_backoff=LEGACY_MAX_BACKOFF,
            **kwargs,
        )

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
        self._unschedulable.pop(key, None)
        if key in self._active_index:
            return  # already waiting: a no-op (§3.2)
        self._add_active(QueuedBinding(key, priority, self.clock(), 0))

    def _add_active(self, entry: QueuedBinding) -> None:
        less = self.less if self.priority_based else None
        item = _HeapItem((-entry.priority, entry.timestamp, next(self._sequence)), entry, less=less)
        self._active_index[entry.key] = item
        heapq.heappush(self._active, item)
        if self.observer is not None:
            self.observer.added()
        if self._wakeup is not None:
            self._wakeup.set()

    # -- consumers ------------------------------------------------------------------------------

    def pop_nowait(self) -> QueuedBinding | None:
        """Take the highest-priority waiting entry, or None when activeQ is empty."""
        while self._active:
            item = heapq.heappop(self._active)
            if not item.valid:
                continue
            entry = item.entry
            del self._active_index[entry.key]
            entry.attempts += 1
            self._processing[entry.key] = entry
            entry.started = self.clock()
            if self.observer is not None:
                self.observer.taken(entry.started - entry.timestamp)
            return entry
        return None

    async def pop(self) -> QueuedBinding:
        """Wait for an entry; raises ``QueueClosed`` once the queue is closed."""
        if self._wakeup is None:
            self._wakeup = asyncio.Event()
        while True:
            if self._closed:
                raise QueueClosed
            entry = self.pop_nowait()
            if entry is not None:
                return entry
            self._wakeup.clear()
            await self._wakeup.wait()

    def done(self, entry: QueuedBinding, outcome: Outcome) -> None:
        """Report how processing ``entry`` ended (see the module docstring)."""
        if self._processing.pop(entry.key, None) is not None and self.observer is not None:
            self.observer.finished(self.clock() - entry.started)
        dirty_priority = self._dirty.pop(entry.key, None)
        if dirty_priority is not None:
            self.push(entry.key, dirty_priority)
        if outcome is Outcome.DONE or self._closed:
            return
        waiting = entry.key in self._active_index
        if outcome is Outcome.UNSCHEDULABLE and self.priority_based:
            if not waiting and entry.key not in self._backoff:
                self._unschedulable[entry.key] = entry
                self._retried()
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

    def close(self) -> None:
        """Stop handing out entries; waiting ``pop()`` calls raise ``QueueClosed``."""
        self._closed = True
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


class QueueClosed(Exception):
    """The queue was closed while a worker waited for an entry."""
