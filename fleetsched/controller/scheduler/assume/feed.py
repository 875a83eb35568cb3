"""Feeding the assume record (the core's ``scheduler/assume.py``) from the ResourceBindings every
replica watches.

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

from collections.abc import Mapping
from typing import Any

from fleetsched.controller.runtime.cache import object_key
from fleetsched.controller.scheduler import decision
from fleetsched.controller.scheduler.store import RB
from fleetsched.scheduler.assume import AssumeRecord, Release, footprint, newly_healthy
from fleetsched.scheduler.convert import ConversionError

__all__ = ["forget", "observe"]

HEALTHY = "Healthy"


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


def _read(obj: Mapping[str, Any]) -> decision.BindingRead | None:
    """The binding as the core reads it; None when it cannot be read (it holds nothing then)."""
    try:
        return decision.read_binding(obj)
    except ConversionError:
        return None


def observe(
    record: AssumeRecord, kind: str, previous: Mapping[str, Any] | None, obj: Mapping[str, Any]
) -> None:
    """One stored version of a binding (watched, listed, or the answer to our own write)."""
    if kind != RB:
        return
    key = object_key(obj)
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
    read = _read(obj)
    if read is None:
        record.release(key, Release.RESCHEDULED)
        return
    record.observe_schedule(key, footprint(read.binding, read.binding.clusters), left=left)


def _derive(record: AssumeRecord, key: str, obj: Mapping[str, Any]) -> None:
    """A binding seen for the first time: its targets not yet Healthy, if scheduled within the TTL."""
    if not _targets(obj):
        return
    read = _read(obj)
    scheduled = read.status.last_scheduled_time if read is not None else None
    if read is None or scheduled is None:
        return
    scheduled_at = scheduled.timestamp()
    if scheduled_at + record.ttl < record.clock():
        return
    footprints = footprint(read.binding, read.binding.clusters)
    if not footprints:
        return
    healthy = {name for name, ok in _health(obj) if ok}
    pending = {name: f for name, f in footprints.items() if name not in healthy}
    if pending:
        record.observe_schedule(key, pending, scheduled_at=scheduled_at)


def forget(record: AssumeRecord, kind: str, obj: Mapping[str, Any]) -> None:
    """A binding deleted."""
    if kind == RB:
        record.release(object_key(obj), Release.DELETED)
