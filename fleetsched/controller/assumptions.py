"""Feeding the assume record (``scheduler/assume.py``) from the ResourceBindings every replica watches.

Karmada keeps the record of the one process that wrote each placement. Here every replica derives
it from what the apiserver holds, so another shard's decisions, a previous leader's and this
process's own are all in it within watch latency:

* a placement written (``spec.clusters`` changed, by any scheduler): its footprint assumed on every
  target, clusters that left released — unless the change is a graceful eviction (the controller
  manager moved a cluster into ``gracefulEvictionTasks``), which only releases the cluster that left;
* a cluster's ``aggregatedStatus`` entry turning Healthy: that cluster released;
* a binding deleted: all of it released;
* a binding first seen (start-up, failover, a new replica): assumed on its targets that are not
  Healthy yet when ``status.lastScheduledTime`` is within the TTL, expiring TTL after that time.

ClusterResourceBindings and non-workloads are never assumed (Karmada tracks workload RBs only).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from fleetsched.controller import decision
from fleetsched.scheduler.assume import AssumeRecord, Release, footprint, newly_healthy
from fleetsched.scheduler.convert import ConversionError

__all__ = ["forget", "observe"]

HEALTHY = "Healthy"
RB = "ResourceBinding"


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _health(obj: Mapping[str, Any]) -> list[tuple[str, bool]]:
    items = (obj.get("status") or {}).get("aggregatedStatus") or ()
    return [
        (str(item.get("clusterName") or ""), item.get("health") == HEALTHY)
        for item in items
        if isinstance(item, Mapping)
    ]


def _targets(obj: Mapping[str, Any]) -> list[Any]:
    clusters = _spec(obj).get("clusters") or []
    return clusters if isinstance(clusters, list) else []


def _scheduled_at(obj: Mapping[str, Any]) -> float | None:
    text = (obj.get("status") or {}).get("lastScheduledTime")
    if not isinstance(text, str) or not text:
        return None
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def _footprints(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The binding's placement as footprints per cluster; None when it cannot be read."""
    try:
        read = decision.read_binding(obj)
    except ConversionError:
        return None
    return footprint(read.binding, read.binding.clusters)


def observe(
    record: AssumeRecord, kind: str, previous: Mapping[str, Any] | None, obj: Mapping[str, Any]
) -> None:
    """One stored version of a binding (watched, listed, or the answer to our own write)."""
    if kind != RB:
        return
    key = _key(obj)
    if previous is None:
        _derive(record, key, obj)
        return
    healthy = newly_healthy(_health(previous), _health(obj))
    if healthy:
        record.release_healthy(key, healthy)
    old, new = _targets(previous), _targets(obj)
    if old == new:
        return
    left = {t.get("name") for t in old if isinstance(t, Mapping)} - {
        t.get("name") for t in new if isinstance(t, Mapping)
    }
    evicted = _spec(previous).get("gracefulEvictionTasks") != _spec(obj).get("gracefulEvictionTasks")
    if evicted:
        record.observe_schedule(key, {}, left=left)
        return
    footprints = _footprints(obj)
    if footprints is None:
        record.release(key, Release.RESCHEDULED)
        return
    record.observe_schedule(key, footprints, left=left)


def _derive(record: AssumeRecord, key: str, obj: Mapping[str, Any]) -> None:
    """A binding seen for the first time: its targets not yet Healthy, if scheduled within the TTL."""
    if not _targets(obj):
        return
    scheduled_at = _scheduled_at(obj)
    if scheduled_at is None or scheduled_at + record.ttl < record.clock():
        return
    footprints = _footprints(obj)
    if not footprints:
        return
    healthy = {name for name, ok in _health(obj) if ok}
    pending = {name: f for name, f in footprints.items() if name not in healthy}
    if pending:
        record.observe_schedule(key, pending, scheduled_at=scheduled_at)


def forget(record: AssumeRecord, kind: str, obj: Mapping[str, Any]) -> None:
    """A binding deleted."""
    if kind == RB:
        record.release(_key(obj), Release.DELETED)
