"""Reserve (gate SchedulingOvercommitProtection): how a decision's footprint is taken in the assume
record, checked again on the clusters whose assumptions changed since the decision saw them, and
how the record is reported and swept. The operator calls these between compute and write."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from fleetsched.controller.runtime import metrics
from fleetsched.scheduler import Scheduler, ScheduleResult
from fleetsched.scheduler.assume import (
    GC_PERIOD,
    AssumeRecord,
    Release,
    Reservation,
    footprint,
    left_clusters,
)
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import SchedulingBinding

Take = Callable[[int], Reservation | None]


def reservation(
    record: AssumeRecord,
    scheduler: Scheduler,
    snapshot: Snapshot,
    key: str,
    binding: SchedulingBinding,
    result: ScheduleResult,
) -> tuple[dict[str, Any], Take]:
    """The result's footprint, and how to take it: ``take(version)`` reserves it, or gives None
    when a target cluster whose assumptions changed since ``version`` (the record the decision
    saw) cannot hold its new replicas any more."""
    assert result.clusters is not None
    new = {t.name: t.replicas for t in result.clusters}
    held: dict[str, int] = {}
    for t in binding.clusters:
        held.setdefault(t.name, t.replicas)
    position = snapshot.position()

    def fits(cluster: str) -> bool:
        if scheduler.estimators != (scheduler.general,):
            return False  # an accurate estimator's answer cannot be re-checked here: decide again
        at = position.get(cluster)
        if at is None:
            return False
        info = record.overlaid(snapshot.clusters[at])
        if binding.components and scheduler.settings.multiple_pod_templates:
            sets = scheduler.general.max_available_component_sets([info], binding.components)[0]
            return cluster in held or sets >= 1
        if binding.replicas == 0:
            return True
        free = scheduler.general.max_available_replicas([info], binding.replica_requirements)[0]
        return new.get(cluster, 0) <= free + held.get(cluster, 0)

    left = left_clusters(binding, result.clusters)
    footprints = footprint(binding, result.clusters)

    def take(version: int) -> Reservation | None:
        return record.reserve(key, footprints, left=left, against=version, fits=fits)

    return footprints, take


def publish(record: AssumeRecord, clusters: Iterable[str]) -> None:
    """The assumed gauges of the clusters whose assumptions changed."""
    for cluster in clusters:
        metrics.set_assumed(cluster, record.load(cluster))
    metrics.ASSUMED_BINDINGS.set(len(record))


def count_released(reason: Release, count: int) -> None:
    # (The operator also offers the release to the unschedulable bindings: queueing hints.)
    metrics.ASSUMPTIONS_RELEASED.labels(str(reason)).inc(count)


async def sweep(record: AssumeRecord, stop: asyncio.Event) -> None:
    """Karmada's GC of expired assumptions (reads skip them at once; this frees and reports them)."""
    period = min(GC_PERIOD, max(record.ttl / 4, 0.5))
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), timeout=period)
        except TimeoutError:
            record.expire()
