"""Which cached bindings a Cluster change can affect, found through an index.

Reconciling a Cluster object C enqueues every binding that passes the event filter and whose
reconcile affinity (``decision.cluster_matches_binding``: the inline affinity of the observed term
of ``clusterAffinities``, or ``clusterAffinity``) is nil or matches C. Walking every binding and
converting its affinity from JSON on every Cluster event costs bindings x events; this index
converts a binding's affinity once, when the binding enters (or changes in) the cache, and files
the binding under ONE key that any cluster it matches must offer:

* ``("name", n)`` for each listed cluster name, when the affinity lists clusterNames;
* ``("label", k, v)`` for a matchLabels pair or each value of an ``In`` expression, or
  ``("label-key", k)`` for an ``Exists`` expression, of its labelSelector;
* ``("field", f, v)`` / ``("field-key", f)`` for provider/region ``In``/``Exists`` and
  ``("zone", z)`` / ``("zone-key",)`` for zone ``In``/``Exists`` of its fieldSelector;
* ``("any",)`` for every other affinity (exclude-only, NotIn/DoesNotExist, empty selectors);
* ``("always",)`` for bindings enqueued whatever the cluster: nil affinity, an unobserved
  generation under ``clusterAffinities``, or a placement that does not convert (the worker
  reports it).

A Cluster looks up only the keys it offers (its name, label pairs and keys, provider, region and
zones); the candidates are then decided by the core's ``ClusterMatches`` exactly as the walk did,
and returned in cache order, so the queue sees the same pushes in the same order.

A status-only Cluster update (a member's heartbeat: resourceSummary, conditions) reconciles no
binding at all, as in Karmada (``decision.cluster_update_reconciles``, §3.1): only a new
deletionTimestamp, a label change or a new generation (a spec change) gets here. Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fleetsched.controller.runtime.cache import object_key
from fleetsched.controller.scheduler import decision
from fleetsched.scheduler.convert import placement_from_dict
from fleetsched.scheduler.matching import compile_affinity
from fleetsched.scheduler.types import ClusterAffinity, ClusterInfo

__all__ = ["AffectedBindings", "cluster_keys", "reconcile_affinity"]

_Key = tuple[str, ...]
_ALWAYS: _Key = ("always",)
_ANY: _Key = ("any",)


class _Always:
    """The reconcile affinity of a binding that every reconciled cluster enqueues."""

    __slots__ = ()


ALWAYS = _Always()


def _raw_affinity(binding: Mapping[str, Any]) -> Any:
    """The JSON affinity ``cluster_matches_binding`` would test, or ALWAYS when it enqueues anyway."""
    spec = binding.get("spec") or {}
    placement = spec.get("placement") or {}
    terms = placement.get("clusterAffinities")
    if terms is not None:
        status = binding.get("status") or {}
        if status.get("schedulerObservedGeneration") != decision.generation(binding):
            return ALWAYS
        observed = status.get("schedulerObservingAffinityName") or ""
        term = next((t for t in terms if t.get("affinityName") == observed), terms[0] if terms else None)
        if term is None:
            return ALWAYS
        return {k: v for k, v in term.items() if k not in ("affinityName", "overflowAffinities")}
    affinity = placement.get("clusterAffinity")
    return ALWAYS if affinity is None else affinity


def reconcile_affinity(binding: Mapping[str, Any]) -> tuple[Any, ClusterAffinity | _Always]:
    """(raw JSON, converted) reconcile affinity of a binding; ALWAYS when any cluster enqueues it.

    A placement that does not convert counts as ALWAYS: the walk enqueued it so that the worker
    reports the bad placement."""
    try:
        raw = _raw_affinity(binding)
        if raw is ALWAYS:
            return raw, ALWAYS
        placement = placement_from_dict({"clusterAffinity": dict(raw)})
    except Exception:  # any unreadable placement is the worker's to report
        return None, ALWAYS
    if placement is None or placement.cluster_affinity is None:
        return raw, ALWAYS
    return raw, placement.cluster_affinity


def _guard(affinity: ClusterAffinity) -> list[_Key]:
    """Keys under one of which every cluster the affinity matches is found (a necessary condition)."""
    if affinity.cluster_names:
        return [("name", name) for name in affinity.cluster_names]
    selector = affinity.label_selector
    if selector is not None:
        if selector.match_labels:
            key, value = selector.match_labels[0]
            return [("label", key, value)]
        for req in selector.match_expressions:
            if req.operator == "In" and req.values:
                return [("label", req.key, value) for value in req.values]
            if req.operator == "Exists":
                return [("label-key", req.key)]
    fields = affinity.field_selector
    if fields is not None:
        for req in fields.match_expressions:
            if req.key == "zone":
                if req.operator == "In" and req.values:
                    return [("zone", value) for value in req.values]
                if req.operator == "Exists":
                    return [("zone-key",)]
            elif req.key in ("provider", "region"):
                if req.operator == "In" and req.values:
                    return [("field", req.key, value) for value in req.values]
                if req.operator == "Exists":
                    return [("field-key", req.key)]
    return [_ANY]


def cluster_keys(cluster: ClusterInfo) -> Iterator[_Key]:
    """Every key a binding matching this cluster can be filed under."""
    yield _ALWAYS
    yield _ANY
    yield ("name", cluster.name)
    for key, value in cluster.labels.items():
        yield ("label", key, value)
        yield ("label-key", key)
    for field_name, value in (("provider", cluster.provider), ("region", cluster.region)):
        if value:
            yield ("field", field_name, value)
            yield ("field-key", field_name)
    if cluster.zones:
        yield ("zone-key",)
        for zone in cluster.zones:
            yield ("zone", zone)


@dataclass(slots=True)
class _Entry:
    seq: int  # position in the cache: the walk's order
    scheduler_name: str
    raw: Any
    affinity: ClusterAffinity | _Always
    keys: tuple[_Key, ...]


class AffectedBindings:
    """The bindings of one cache by reconcile affinity; fed by ``ObjectCache`` on upsert/delete."""

    __slots__ = ("_buckets", "_entries", "_seq", "_sequence")

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._buckets: dict[_Key, dict[str, None]] = {}
        self._sequence: dict[str, int] = {}  # every cached key, indexed or not, in cache order
        self._seq = 0

    def __len__(self) -> int:
        return len(self._entries)

    def upsert(self, key: str, obj: Mapping[str, Any]) -> None:
        seq = self._sequence.get(key)
        if seq is None:
            seq = self._sequence[key] = self._seq
            self._seq += 1
        old = self._entries.get(key)
        spec = obj.get("spec") or {}
        labels = (obj.get("metadata") or {}).get("labels") or {}
        # The event filter without the scheduler name, which is checked at lookup.
        if decision.scheduling_suspended(obj) or not any(
            labels.get(label) for label in decision.PERMANENT_ID_LABELS
        ):
            self._unfile(key, old)
            return
        scheduler_name = spec.get("schedulerName") or decision.DEFAULT_SCHEDULER_NAME
        if old is not None and old.raw is not None and old.raw is not ALWAYS:
            raw = _raw_affinity_or_none(obj)
            if raw is not None and raw is not ALWAYS and raw == old.raw:
                old.scheduler_name = scheduler_name  # same affinity: nothing to convert or refile
                return
        raw, affinity = reconcile_affinity(obj)
        keys = (_ALWAYS,) if isinstance(affinity, _Always) else tuple(_guard(affinity))
        if old is not None and old.keys == keys:
            old.scheduler_name, old.raw, old.affinity = scheduler_name, raw, affinity
            return
        self._unfile(key, old)
        self._entries[key] = _Entry(seq, scheduler_name, raw, affinity, keys)
        for bucket_key in keys:
            self._buckets.setdefault(bucket_key, {})[key] = None

    def delete(self, key: str) -> None:
        self._sequence.pop(key, None)
        self._unfile(key, self._entries.get(key))

    def _unfile(self, key: str, entry: _Entry | None) -> None:
        if entry is None:
            return
        del self._entries[key]
        for bucket_key in entry.keys:
            bucket = self._buckets.get(bucket_key)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del self._buckets[bucket_key]

    def affected(self, cluster: ClusterInfo, scheduler_names: Collection[str]) -> list[str]:
        """Keys of the bindings a reconcile of ``cluster`` enqueues, in cache order."""
        candidates: set[str] = set()
        for bucket_key in cluster_keys(cluster):
            bucket = self._buckets.get(bucket_key)
            if bucket:
                candidates.update(bucket)
        hits: list[tuple[int, str]] = []
        for key in candidates:
            entry = self._entries[key]
            if entry.scheduler_name not in scheduler_names:
                continue
            if isinstance(entry.affinity, _Always) or compile_affinity(entry.affinity)(cluster):
                hits.append((entry.seq, key))
        hits.sort()
        return [key for _, key in hits]


def _raw_affinity_or_none(binding: Mapping[str, Any]) -> Any:
    try:
        return _raw_affinity(binding)
    except Exception:  # reconcile_affinity decides what an unreadable placement is
        return None


def affected_index(cache: Any) -> AffectedBindings:
    """The ``AffectedBindings`` of a binding ``ObjectCache``, attached (and filled) if it has none."""
    index = cache.index
    if not isinstance(index, AffectedBindings):
        index = AffectedBindings()
        for obj in cache:
            index.upsert(object_key(obj), obj)
        cache.index = index
    return index
