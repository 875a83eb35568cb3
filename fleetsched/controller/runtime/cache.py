"""In-memory caches of bindings and Clusters, fed by the watch and by our own write responses.

* ``ObjectCache`` keeps the newest JSON object per key (``namespace/name`` or ``name``). An object
  only replaces the cached one when its ``resourceVersion`` is not older, so a late watch event
  never rolls back a newer copy that came from one of our own write responses.
  An optional ``CacheIndex`` is kept in step with every upsert and delete.
* ``ClusterStore`` adds the scheduling view: a ``Snapshot`` of converted clusters that every
  binding shares until a Cluster changes; a change replaces that Cluster's entry only.

No I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import structlog

from fleetsched.scheduler import Snapshot
from fleetsched.scheduler.convert import ConversionError, cluster_from_dict
from fleetsched.scheduler.types import ClusterInfo

log = structlog.get_logger("fleetsched.cache")

Obj = dict[str, Any]


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def resource_version(obj: Mapping[str, Any] | None) -> int | None:
    if obj is None:
        return None
    text = (obj.get("metadata") or {}).get("resourceVersion")
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def is_newer_or_same(candidate: Mapping[str, Any], current: Mapping[str, Any] | None) -> bool:
    new_rv, old_rv = resource_version(candidate), resource_version(current)
    return new_rv is None or old_rv is None or new_rv >= old_rv


class CacheIndex(Protocol):
    """A secondary index kept in step with an ``ObjectCache`` (e.g. ``affected.AffectedBindings``):
    told of every object stored and every key removed, after the cache changed."""

    def upsert(self, key: str, obj: Obj) -> None: ...

    def delete(self, key: str) -> None: ...


class ObjectCache:
    def __init__(self, index: CacheIndex | None = None) -> None:
        self._objects: dict[str, Obj] = {}
        self.index = index
        # more observers of the same changes (e.g. the scheduler's unscheduled-bindings gauge)
        self.listeners: list[CacheIndex] = []

    def get(self, key: str) -> Obj | None:
        return self._objects.get(key)

    def upsert(self, obj: Obj) -> tuple[bool, Obj | None]:
        """Store ``obj`` unless the cached copy is newer; returns (stored, previous copy)."""
        key = object_key(obj)
        previous = self._objects.get(key)
        if not is_newer_or_same(obj, previous):
            return False, previous
        self._objects[key] = obj
        if self.index is not None:
            self.index.upsert(key, obj)
        for listener in self.listeners:
            listener.upsert(key, obj)
        return True, previous

    def delete(self, key: str) -> Obj | None:
        removed = self._objects.pop(key, None)
        if removed is not None:
            if self.index is not None:
                self.index.delete(key)
            for listener in self.listeners:
                listener.delete(key)
        return removed

    def __iter__(self) -> Iterator[Obj]:
        return iter(list(self._objects.values()))

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, key: object) -> bool:
        return key in self._objects


class ClusterStore(ObjectCache):
    """Clusters, and the ``Snapshot`` every binding scheduled until the next change shares.

    A change of a Cluster already in the snapshot (a status heartbeat, a new label) replaces that
    one entry (``Snapshot.replaced``): the other clusters keep their converted values, and with them
    the estimator's prepared rows and the Framework's memos. Only a Cluster added, removed, or
    turning (un)readable rebuilds the list. Nothing per change walks all Clusters.
    """

    def __init__(self) -> None:
        super().__init__()
        self._infos: dict[str, tuple[int | None, ClusterInfo]] = {}
        self._snapshot: Snapshot | None = None
        # Position of each key in ``_snapshot``; keys changed since it was made.
        self._positions: dict[str, int] = {}
        self._dirty: set[str] = set()
        self._rebuild = True
        self._deleting: set[str] = set()
        self._terminating: frozenset[str] | None = frozenset()
        self.version = 0

    def upsert(self, obj: Obj) -> tuple[bool, Obj | None]:
        stored, previous = super().upsert(obj)
        if stored and (
            previous is None
            or resource_version(previous) != resource_version(obj)
            or resource_version(obj) is None
        ):
            key = object_key(obj)
            if previous is None or key not in self._positions:
                self._rebuild = True
            else:
                self._dirty.add(key)
            name = (obj.get("metadata") or {}).get("name", "")
            if (obj.get("metadata") or {}).get("deletionTimestamp"):
                if name not in self._deleting:
                    self._deleting.add(name)
                    self._terminating = None
            elif name in self._deleting:
                self._deleting.discard(name)
                self._terminating = None
            self.version += 1
        return stored, previous

    def delete(self, key: str) -> Obj | None:
        removed = super().delete(key)
        if removed is not None:
            self._infos.pop(key, None)
            self._dirty.discard(key)
            self._rebuild = True
            name = (removed.get("metadata") or {}).get("name", "")
            if name in self._deleting:
                self._deleting.discard(name)
                self._terminating = None
            self.version += 1
        return removed

    def _convert(self, key: str, obj: Obj) -> ClusterInfo | None:
        """The converted cluster, from the memo while its resourceVersion is unchanged; None (and a
        warning) for a malformed one, which is left out rather than stopping all scheduling."""
        rv = resource_version(obj)
        cached = self._infos.get(key)
        if cached is not None and cached[0] == rv and rv is not None:
            return cached[1]
        try:
            info = cluster_from_dict(obj)
        except ConversionError as exc:
            log.warning("cluster_unreadable", cluster=key, error=str(exc))
            self._infos.pop(key, None)
            return None
        self._infos[key] = (rv, info)
        return info

    def converted(self, obj: Obj) -> ClusterInfo | None:
        """``obj`` (this store's object, or the one it just replaced) as the core sees it, through
        the memo the snapshots use: the previous version is usually converted already, and the
        new one is then not converted again by the next snapshot. None when malformed."""
        return self._convert(object_key(obj), obj)

    def snapshot(self) -> Snapshot:
        """The clusters as the scheduling core sees them; shared until a Cluster changes, then
        derived from the previous one by replacing the changed clusters only."""
        if self._snapshot is not None and not self._rebuild and self._dirty:
            changes: dict[int, ClusterInfo] = {}
            for key in self._dirty:
                info = self._convert(key, self._objects[key])
                if info is None:  # turned unreadable: it leaves the list
                    self._rebuild = True
                    break
                changes[self._positions[key]] = info
            else:
                self._snapshot = self._snapshot.replaced(changes)
            self._dirty.clear()
        if self._snapshot is None or self._rebuild:
            infos: list[ClusterInfo] = []
            positions: dict[str, int] = {}
            for key, obj in sorted(self._objects.items()):
                info = self._convert(key, obj)
                if info is not None:
                    positions[key] = len(infos)
                    infos.append(info)
            self._snapshot = Snapshot(infos)
            self._positions = positions
            self._dirty.clear()
            self._rebuild = False
        return self._snapshot

    def terminating(self) -> frozenset[str]:
        """Names of the Clusters being deleted; asked once per binding, kept up to date per change."""
        if self._terminating is None:
            self._terminating = frozenset(self._deleting)
        return self._terminating
