"""Caches never go back in time, and the cluster snapshot is shared until a Cluster changes."""

from __future__ import annotations

from typing import Any

from fleetsched.controller.runtime.cache import ClusterStore, ObjectCache


def obj(name: str, rv: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": rv, **extra}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, "spec": {}}


def test_an_older_copy_never_replaces_a_newer_one() -> None:
    cache = ObjectCache()
    assert cache.upsert(obj("b", "10", "ns")) == (True, None)
    stored, previous = cache.upsert(obj("b", "12", "ns"))
    assert stored and previous is not None and previous["metadata"]["resourceVersion"] == "10"
    stored, _ = cache.upsert(obj("b", "11", "ns"))  # a late watch event after our own write
    assert not stored
    current = cache.get("ns/b")
    assert current is not None and current["metadata"]["resourceVersion"] == "12"


def test_snapshot_is_rebuilt_only_after_a_cluster_changes() -> None:
    store = ClusterStore()
    store.upsert(obj("m1", "1"))
    store.upsert(obj("m2", "2"))
    first = store.snapshot()
    assert [c.name for c in first.clusters] == ["m1", "m2"]
    assert store.snapshot() is first
    store.upsert(obj("m2", "2"))  # the same version again (a relist): nothing changed
    assert store.snapshot() is first
    store.upsert(obj("m2", "3", deletionTimestamp="2026-01-01T00:00:00Z"))
    second = store.snapshot()
    assert second is not first
    assert [c.deleting for c in second.clusters] == [False, True]
    assert store.terminating() == {"m2"}
    store.delete("m1")
    assert [c.name for c in store.snapshot().clusters] == ["m2"]


def test_terminating_clusters_follow_every_change() -> None:
    store = ClusterStore()
    store.upsert(obj("m1", "1"))
    assert store.terminating() == frozenset()
    store.upsert(obj("m1", "2", deletionTimestamp="2026-01-01T00:00:00Z"))
    assert store.terminating() == {"m1"}
    store.upsert(obj("m2", "3", deletionTimestamp="2026-01-01T00:00:00Z"))
    assert store.terminating() == {"m1", "m2"}
    store.delete("m1")
    assert store.terminating() == {"m2"}
