"""The assume record at the scheduler's edge: one object that the rest of the scheduler assumes,
forgets and observes through, whether the gate is on or off.

* ``WatchedRecord`` (gate SchedulingOvercommitProtection on): the core's ``AssumeRecord`` fed from
  every stored version of a binding (``observe``: ``feed.py``), a decision's footprint taken in it
  before its write (``assume``: the core re-checks a changed cluster's capacity,
  ``scheduler/refit.py``), agreed with the shard group's other replicas in sharded mode
  (``ledger.py``), and given back when the binding cycle fails (``forget``); its gauges, its
  release metric and its sweep of expired assumptions;
* ``NoRecord`` (gate off): assumes nothing, every call is a no-op, so no caller asks which it has.

As kube-scheduler's cache: ``assume`` before the write, ``forget`` when the binding cycle fails,
and what the watch says (``observe``) replaces an assumption by the placement as written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.cache import resource_version
from fleetsched.controller.scheduler.assume import feed
from fleetsched.controller.scheduler.assume.ledger import Ledger
from fleetsched.kube.client import KubeClient
from fleetsched.scheduler import Scheduler, ScheduleResult
from fleetsched.scheduler.assume import (
    GC_PERIOD,
    AssumeRecord,
    Release,
    Reservation,
    footprint,
    left_clusters,
    name_shortfall,
)
from fleetsched.scheduler.framework import hints
from fleetsched.scheduler.refit import still_fits
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import SchedulingBinding

Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Assumption:
    """What ``assume`` took for one decision (nothing, when its placement is unchanged or the gate
    is off): handed back to ``bound`` after the write or to ``forget`` when the cycle fails."""

    key: str
    reservation: Reservation | None = None
    in_ledger: bool = False  # committed to the shard group's ledger (sharded mode)


class Record(Protocol):
    """What the scheduler does with the assume record (``WatchedRecord`` or ``NoRecord``)."""

    @property
    def version(self) -> int: ...

    def observe(self, kind: str, previous: Obj | None, obj: Obj | None) -> None: ...

    def overlay(self, snapshot: Snapshot) -> Snapshot: ...

    def shortfall(self, result: ScheduleResult, clusters: Iterable[str]) -> ScheduleResult: ...

    def rejections(self, rejections: tuple[hints.Rejection, ...]) -> tuple[hints.Rejection, ...]: ...

    async def assume(
        self, key: str, obj: Obj, binding: SchedulingBinding, result: ScheduleResult, *,
        scheduler: Scheduler, snapshot: Snapshot, version: int,
    ) -> Assumption | None: ...

    def bound(self, assumption: Assumption) -> None: ...

    def forget(self, assumption: Assumption) -> None: ...

    def helpers(self, stop: asyncio.Event) -> dict[str, Coroutine[Any, Any, None]]: ...

    def holds(self, key: str) -> bool: ...


class NoRecord:
    """Gate SchedulingOvercommitProtection off: nothing is assumed."""

    version = 0

    def observe(self, kind: str, previous: Obj | None, obj: Obj | None) -> None:
        return None

    def overlay(self, snapshot: Snapshot) -> Snapshot:
        return snapshot

    def shortfall(self, result: ScheduleResult, clusters: Iterable[str]) -> ScheduleResult:
        return result

    def rejections(self, rejections: tuple[hints.Rejection, ...]) -> tuple[hints.Rejection, ...]:
        return rejections

    async def assume(
        self, key: str, obj: Obj, binding: SchedulingBinding, result: ScheduleResult, *,
        scheduler: Scheduler, snapshot: Snapshot, version: int,
    ) -> Assumption | None:
        return Assumption(key)

    def bound(self, assumption: Assumption) -> None:
        return None

    def forget(self, assumption: Assumption) -> None:
        return None

    def helpers(self, stop: asyncio.Event) -> dict[str, Coroutine[Any, Any, None]]:
        return {}

    def holds(self, key: str) -> bool:
        return False


class WatchedRecord:
    """Gate SchedulingOvercommitProtection on: capacity decided but not yet in the clusters' status,
    kept by every replica from the bindings it watches. ``on_released`` hears the clusters that got
    room back (for the queueing hints)."""

    def __init__(self, ttl: float, *, on_released: Callable[[tuple[str, ...]], None]) -> None:
        self.record = AssumeRecord(ttl, on_change=self._changed, on_release=self._released)
        # sharded mode: the shard group's reservation ledger (``share``)
        self.ledger: Ledger | None = None
        self._on_released = on_released
        # the clusters whose assumptions changed last (a release names them)
        self._touched: tuple[str, ...] = ()

    def share(
        self, client: KubeClient, *, namespace: str, group: str, member: str,
        seen_version: Callable[[str], int | None], members: Callable[[], Collection[str] | None],
    ) -> None:
        """Sharded mode: decisions agreed with the group's other replicas before their writes."""
        self.ledger = Ledger(client, self.record, namespace=namespace, group=group, member=member,
                             seen_version=seen_version, members=members)

    @property
    def version(self) -> int:
        return self.record.version

    def observe(self, kind: str, previous: Obj | None, obj: Obj | None) -> None:
        """A binding's version stored (watched, listed or our write's answer), or (``obj`` None)
        the binding deleted: every replica keeps every binding's in-flight capacity."""
        if obj is None:
            if previous is not None:
                feed.forget(self.record, kind, previous)
            return
        feed.observe(self.record, kind, previous, obj)

    def overlay(self, snapshot: Snapshot) -> Snapshot:
        overlaid = self.record.overlay(snapshot)
        assert isinstance(overlaid, Snapshot)
        return overlaid

    def shortfall(self, result: ScheduleResult, clusters: Iterable[str]) -> ScheduleResult:
        """An Unschedulable result says how much the record held on ``clusters``."""
        return name_shortfall(self.record, result, clusters)

    def rejections(self, rejections: tuple[hints.Rejection, ...]) -> tuple[hints.Rejection, ...]:
        """Clusters short of room may also get it when the record releases some (queueing hints)."""
        short = next((r.clusters for r in rejections if r.plugin == hints.ESTIMATOR), None)
        if not short:
            return rejections
        return (*rejections, hints.Rejection(hints.ASSUME_RECORD, short))

    async def assume(
        self, key: str, obj: Obj, binding: SchedulingBinding, result: ScheduleResult, *,
        scheduler: Scheduler, snapshot: Snapshot, version: int,
    ) -> Assumption | None:
        """Take the decision's footprint, computed against the record at ``version``; None when a
        target cluster changed since and no longer holds it (decide again). An unchanged placement
        assumes nothing (Karmada's patch is empty). Sharded, the footprint is committed to the
        ledger before the write (``DecisionTooLarge`` when it can never be)."""
        assert result.clusters is not None
        if result.clusters == binding.clusters:
            return Assumption(key)
        fits = still_fits(scheduler, self.record, snapshot, binding, result.clusters)
        left = left_clusters(binding, result.clusters)
        footprints = footprint(binding, result.clusters)

        def take(against: int) -> Reservation | None:
            return self.record.reserve(key, footprints, left=left, against=against, fits=fits)

        reservation = take(version)
        if reservation is None or self.ledger is None:
            return None if reservation is None else Assumption(key, reservation)
        base = str(resource_version(obj) or "")
        reservation = await self.ledger.commit(key, footprints, reservation, take, base=base)
        return None if reservation is None else Assumption(key, reservation, in_ledger=True)

    def bound(self, assumption: Assumption) -> None:
        """The decision is written: its ledger entry leaves after the others saw the write."""
        if assumption.in_ledger and self.ledger is not None:
            self.ledger.written(assumption.key)

    def forget(self, assumption: Assumption) -> None:
        """The decision will not be written: what it took given back, its ledger entry dropped."""
        if assumption.reservation is not None:
            self.record.unreserve(assumption.reservation)
        if assumption.in_ledger and self.ledger is not None:
            self.ledger.written(assumption.key, failed=True)

    def helpers(self, stop: asyncio.Event) -> dict[str, Coroutine[Any, Any, None]]:
        """What runs beside the watches, by task name: the sweep of expired assumptions, the ledger."""
        helpers = {"assumption-gc": self._sweep(stop)}
        if self.ledger is not None:
            helpers["assumption-ledger"] = self.ledger.run(stop)
        return helpers

    def holds(self, key: str) -> bool:
        return self.record.holds(key)

    async def _sweep(self, stop: asyncio.Event) -> None:
        """Karmada's GC of expired assumptions (reads skip them at once; this frees and reports them)."""
        period = min(GC_PERIOD, max(self.record.ttl / 4, 0.5))
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=period)
            except TimeoutError:
                self.record.expire()

    def _changed(self, clusters: Iterable[str]) -> None:
        """The assumed gauges of the clusters whose assumptions changed."""
        self._touched = tuple(clusters)
        for cluster in self._touched:
            metrics.set_assumed(cluster, self.record.load(cluster))
        metrics.ASSUMED_BINDINGS.set(len(self.record))

    def _released(self, reason: Release, count: int) -> None:
        """The record gave room back (it reports a release right after the change naming its
        clusters): counted, and said for the queueing hints."""
        metrics.ASSUMPTIONS_RELEASED.labels(str(reason)).inc(count)
        touched, self._touched = self._touched, ()
        self._on_released(touched)
