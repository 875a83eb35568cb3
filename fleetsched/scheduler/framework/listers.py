"""Read-only listers a plugin reaches through its ``Handle`` (kube-scheduler's informer listers).

Owns the ``Lister`` shape (``get(key)``, ``list()``) and ``Listers``, the set of them one process
gives every Framework: Namespaces, Clusters and bindings. The values are the frozen views the core
uses everywhere (``NamespaceInfo``, ``ClusterInfo``, ``SchedulingBinding``): a plugin cannot change
them. The edge attaches the sources (the operator its watch caches, ``simulate`` its input
objects); before that, or where a kind has no source, a lister is empty. Must do no I/O itself.

Which kinds were asked for is recorded (``Listers.asked``), so the live scheduler watches
Namespaces only when a plugin asked for their lister.

Reuse: a lister's content changes without the cluster snapshot changing, so an answer that reads a
lister must carry what it read in its ``binding_key`` (see ``interface.py``, and ``docs/plugin-api.md``
for the once-per-attempt pattern), or not implement ``DeclaresInputs`` (then it is never reused).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Generic, Protocol, TypeVar

from fleetsched.scheduler.types import ClusterInfo, NamespaceInfo, SchedulingBinding

__all__ = ["BINDINGS", "CLUSTERS", "NAMESPACES", "Lister", "Listers", "MappingLister", "SourceLister"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

NAMESPACES = "namespaces"
CLUSTERS = "clusters"
BINDINGS = "bindings"


class Lister(Protocol[T_co]):
    """One kind's objects, read-only. Keys: a Namespace's or Cluster's name; a ResourceBinding's
    ``namespace/name``, a ClusterResourceBinding's ``name``."""

    def get(self, key: str) -> T_co | None: ...

    def list(self) -> tuple[T_co, ...]: ...


class MappingLister(Generic[T]):
    """A lister over a fixed mapping key -> value (``simulate``'s input, tests)."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, T]) -> None:
        self._items = dict(items)

    def get(self, key: str) -> T | None:
        return self._items.get(key)

    def list(self) -> tuple[T, ...]:
        return tuple(self._items[k] for k in sorted(self._items))


class SourceLister(Generic[T]):
    """A lister over two functions of the edge (a watch cache read and converted on demand)."""

    __slots__ = ("_get", "_list")

    def __init__(self, get: Callable[[str], T | None], list_: Callable[[], Iterable[T]]) -> None:
        self._get = get
        self._list = list_

    def get(self, key: str) -> T | None:
        return self._get(key)

    def list(self) -> tuple[T, ...]:
        return tuple(self._list())


class _Attached(Generic[T]):
    """What a plugin holds: reads whatever source is attached to its kind at the time of the call."""

    __slots__ = ("_kind", "_listers")

    def __init__(self, listers: Listers, kind: str) -> None:
        self._listers = listers
        self._kind = kind

    def get(self, key: str) -> T | None:
        source = self._listers._sources.get(self._kind)
        return None if source is None else source.get(key)  # type: ignore[no-any-return]

    def list(self) -> tuple[T, ...]:
        source = self._listers._sources.get(self._kind)
        return () if source is None else source.list()  # type: ignore[no-any-return]


class Listers:
    """The listers of one process, shared by its Frameworks. Plugins call ``namespaces()``,
    ``clusters()`` or ``bindings()`` (usually once, in their factory); the edge calls ``attach``."""

    def __init__(
        self,
        *,
        namespaces: Lister[NamespaceInfo] | None = None,
        clusters: Lister[ClusterInfo] | None = None,
        bindings: Lister[SchedulingBinding] | None = None,
    ) -> None:
        self._sources: dict[str, Lister[object]] = {}
        self._asked: set[str] = set()
        self._lock = threading.Lock()
        self.attach(namespaces=namespaces, clusters=clusters, bindings=bindings)

    def attach(
        self,
        *,
        namespaces: Lister[NamespaceInfo] | None = None,
        clusters: Lister[ClusterInfo] | None = None,
        bindings: Lister[SchedulingBinding] | None = None,
    ) -> None:
        """Give kinds their source (a kind left None keeps the one it had)."""
        for kind, source in ((NAMESPACES, namespaces), (CLUSTERS, clusters), (BINDINGS, bindings)):
            if source is not None:
                self._sources[kind] = source

    @property
    def asked(self) -> frozenset[str]:
        """The kinds some plugin asked a lister for."""
        with self._lock:
            return frozenset(self._asked)

    def _lister(self, kind: str) -> _Attached[object]:
        with self._lock:
            self._asked.add(kind)
        return _Attached(self, kind)

    def namespaces(self) -> Lister[NamespaceInfo]:
        """Namespaces by name. The live scheduler watches Namespaces only once this was asked."""
        return self._lister(NAMESPACES)  # type: ignore[return-value]

    def clusters(self) -> Lister[ClusterInfo]:
        """Clusters by name (the values the scheduler's snapshots are made of)."""
        return self._lister(CLUSTERS)  # type: ignore[return-value]

    def bindings(self) -> Lister[SchedulingBinding]:
        """ResourceBindings by ``namespace/name`` and ClusterResourceBindings by ``name``."""
        return self._lister(BINDINGS)  # type: ignore[return-value]
