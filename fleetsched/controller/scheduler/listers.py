"""The live scheduler's listers: the plugins' read-only views over the operator's watch caches.

Owns the conversion of a cached object to the frozen value a plugin reads (memoised per
resourceVersion, so a read costs a dict lookup while the object is unchanged) and the choice of
which caches back which kind. Reads come from the core's worker threads while the event loop
updates the caches: each read is one dict lookup or one copy of the values (``ObjectCache``),
both atomic under the GIL. Must not start watches itself (the operator does, only for the kinds
asked: Namespaces cost a watch of their own, Clusters and bindings are watched anyway).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

import structlog
from prometheus_client import CollectorRegistry

from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.cache import ObjectCache, object_key, resource_version
from fleetsched.kube import watch
from fleetsched.kube.client import KubeClient
from fleetsched.scheduler.convert import (
    ConversionError,
    binding_from_dict,
    cluster_from_dict,
    namespace_from_dict,
)
from fleetsched.scheduler.framework.listers import NAMESPACES, Listers, SourceLister
from fleetsched.scheduler.framework.plugin_metrics import PluginMetrics
from fleetsched.scheduler.types import ClusterInfo, NamespaceInfo, SchedulingBinding

log = structlog.get_logger("fleetsched.scheduler")

T = TypeVar("T")

NAMESPACES_PATH = "/api/v1/namespaces"


class Converted(Generic[T]):
    """Cached objects of one or more caches, converted on demand and memoised by resourceVersion.
    An object that does not convert is left out (and logged once per version)."""

    def __init__(self, caches: tuple[ObjectCache, ...], convert: Callable[[Mapping[str, Any]], T]) -> None:
        self._caches = caches
        self._convert = convert
        self._memo: dict[str, tuple[int | None, T | None]] = {}

    def _value(self, key: str, obj: Mapping[str, Any]) -> T | None:
        rv = resource_version(obj)
        found = self._memo.get(key)
        if found is not None and rv is not None and found[0] == rv:
            return found[1]
        try:
            value: T | None = self._convert(obj)
        except ConversionError as exc:
            log.warning("lister_object_unreadable", key=key, error=str(exc))
            value = None
        if len(self._memo) > 4 * max(1, sum(len(c) for c in self._caches)):
            self._memo.clear()  # deleted objects' entries: dropped now and then, not per event
        self._memo[key] = (rv, value)
        return value

    def get(self, key: str) -> T | None:
        for cache in self._caches:
            obj = cache.get(key)
            if obj is not None:
                return self._value(key, obj)
        return None

    def list(self) -> list[T]:
        out: list[T] = []
        for cache in self._caches:
            for obj in cache:  # a copy of the values (ObjectCache.__iter__)
                meta = obj.get("metadata") or {}
                ns, name = meta.get("namespace"), meta.get("name", "")
                value = self._value(f"{ns}/{name}" if ns else str(name), obj)
                if value is not None:
                    out.append(value)
        return out


def attach(
    listers: Listers,
    *,
    clusters: ObjectCache,
    bindings: tuple[ObjectCache, ...],
    namespaces: ObjectCache | None,
) -> None:
    """Back ``listers`` with the operator's caches (Namespaces only when the operator watches them)."""
    cl: Converted[ClusterInfo] = Converted((clusters,), cluster_from_dict)
    rb: Converted[SchedulingBinding] = Converted(bindings, binding_from_dict)
    ns: Converted[NamespaceInfo] | None = (
        Converted((namespaces,), namespace_from_dict) if namespaces is not None else None
    )
    listers.attach(
        clusters=SourceLister(cl.get, cl.list),
        bindings=SourceLister(rb.get, rb.list),
        namespaces=SourceLister(ns.get, ns.list) if ns is not None else None,
    )


def attach_all(
    cores: Iterable[object], *, clusters: ObjectCache, bindings: Mapping[str, ObjectCache]
) -> ObjectCache | None:
    """Back the listers of every core (a ``Scheduler`` per profile) with the caches; a new, empty
    Namespace cache when some plugin asked for the Namespace lister (the operator then watches
    Namespaces into it), else None."""
    every: dict[int, Listers] = {}
    for core in cores:
        found = getattr(getattr(core, "framework", None), "listers", None)  # duck-typed cores: none
        if isinstance(found, Listers):
            every[id(found)] = found
    namespaces = ObjectCache() if any(NAMESPACES in each.asked for each in every.values()) else None
    for each in every.values():
        attach(each, clusters=clusters, bindings=tuple(bindings.values()), namespaces=namespaces)
    return namespaces


def on_namespace_event(namespaces: ObjectCache, event_type: str | None, obj: dict[str, Any]) -> None:
    if event_type == "DELETED":
        namespaces.delete(object_key(obj))
    else:
        namespaces.upsert(obj)


def namespace_watches(client: KubeClient, namespaces: ObjectCache | None) -> list[watch.Watch]:
    """The Namespace watch, none when Namespaces are not cached. It makes its own LIST: the operator's
    workers start once every watch has listed, so no binding is scheduled before Namespaces are known."""
    if namespaces is None:
        return []
    return [watch.Watch(client, NAMESPACES_PATH, functools.partial(on_namespace_event, namespaces),
                        api_version="v1", kind="Namespace", transform=watch.strip_managed_fields)]


def export_plugin_metrics(cores: Iterable[object], registry: CollectorRegistry) -> None:
    """Register the collectors the plugins registered through their Handle with ``registry`` (the one
    ``/metrics`` serves), each once. A collector whose names clash with a registered metric is left
    out with a warning: a plugin must not stop the scheduler."""
    seen: set[int] = set()
    for core in cores:
        found = getattr(getattr(core, "framework", None), "plugin_metrics", None)
        if not isinstance(found, PluginMetrics):
            continue
        for collector in found.collectors():
            if id(collector) in seen:
                continue
            seen.add(id(collector))
            try:
                registry.register(collector)  # type: ignore[arg-type]
            except ValueError as exc:  # a duplicated time series
                log.warning("plugin_metric_refused", collector=type(collector).__name__, error=str(exc))


def wire(
    scheduler: object,
    profiles: Mapping[str, object],
    clusters: ObjectCache,
    bindings: Mapping[str, ObjectCache],
) -> ObjectCache | None:
    """The operator's one call: back the listers of its cores (``scheduler`` and one per profile)
    with its caches and export their plugins' metrics on /metrics. Returns the Namespace cache to
    watch into, or None (``attach_all``)."""
    cores = (scheduler, *profiles.values())
    namespaces = attach_all(cores, clusters=clusters, bindings=bindings)
    export_plugin_metrics(cores, metrics.REGISTRY)
    return namespaces
