"""What the scheduler does with what it watches: binding, Cluster and assumption events into the
caches and the queue (kube-scheduler's ``eventhandlers.go``).

* binding events (§3.1): the cache (and through it the assume record and the peers), the event
  filter, sharded ownership, and which adds and updates enqueue the binding;
* Cluster events: the store, the bindings a changed Cluster may now match (reconcile affinities,
  found through ``affected.py``), and the queueing hints a Cluster change offers;
* assumption events: room the assume record gave back, offered to the unschedulable bindings;
* the initial sync (a LIST of each, so caches are complete before anything is scheduled) and the
  watches that follow, each from where its LIST ended.

Watching writes nothing: no annotations, finalizers or peering objects on Karmada objects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from fleetsched.controller.runtime import controller as runtime_gc
from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.cache import ObjectCache, object_key, resource_version
from fleetsched.controller.runtime.controller import ControllerRuntime
from fleetsched.controller.runtime.queue import SchedulingQueue
from fleetsched.controller.scheduler import decision, listers
from fleetsched.controller.scheduler.affected import affected_index
from fleetsched.controller.scheduler.assume import Record
from fleetsched.controller.scheduler.reporting import Reporter
from fleetsched.controller.scheduler.store import (
    CLUSTER_API,
    CLUSTERS_PATH,
    CRB,
    PLURALS,
    RB,
    WORK_API,
    BindingStore,
    binding_uid,
    list_path,
    queue_key,
)
from fleetsched.kube import watch
from fleetsched.kube.client import KubeClient
from fleetsched.scheduler.convert import ConversionError, cluster_from_dict
from fleetsched.scheduler.framework import hints

log = structlog.get_logger("fleetsched.scheduler")


@dataclass
class EventHandlers:
    client: KubeClient
    store: BindingStore
    queue: SchedulingQueue
    runtime: ControllerRuntime
    report: Reporter
    assumptions: Record
    scheduler_names: frozenset[str]
    sharded: bool = False
    # --binding-update-debounce (seconds): spec updates of one binding within it are scheduled once
    debounce: float = 0.0
    accurate: Any = None  # the accurate estimator client (connect/forget per Cluster), if enabled
    namespaces: ObjectCache | None = None  # cached (and watched) only when a plugin asked for their lister
    background: Callable[[Awaitable[Any]], None] = lambda coroutine: None
    # path -> (resourceVersion, items) of the initial sync's LISTs, handed to the watches once
    _listed: dict[str, tuple[str, list[dict[str, Any]]]] = field(default_factory=dict)

    # ---- bindings -------------------------------------------------------------------------------

    def on_binding_event(self, kind: str, event_type: str | None, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        qkey = queue_key(kind, key)
        if event_type == "DELETED":
            self.queue.forget(qkey)
            self.report.forget(qkey)
            self.runtime.forget_owned(qkey)
            self.store.deleted(kind, key, obj)
            self._binding_hint_events(obj, None)
            return
        cached = self.store.get(kind, key)
        if cached is not None and resource_version(cached) == resource_version(obj) is not None:
            return  # the same object: mostly the echo of our own write, whose response is cached
        stored, previous = self.store.upsert(kind, obj)  # every replica keeps every binding's assumptions
        if not stored:
            return
        if previous is not None:
            self._binding_hint_events(previous, obj)
        names = self.scheduler_names
        new_passes = self.report.passes_by(qkey, decision.skip_reason(obj, names))
        if self.sharded:
            if not new_passes:
                self.runtime.forget_owned(qkey)
            elif not self.runtime.note_owned(qkey, binding_uid(obj)):
                return  # another replica's: it is pushed here if ownership moves (membership_changed)
        old_passes = previous is not None and decision.passes_filter(previous, names)
        own = self.store.own_generation
        if new_passes and (previous is None or not old_passes):
            metrics.QUEUE_INCOMING_BINDINGS.labels(metrics.EVENT_BINDING_ADD).inc()
            self.queue.push(qkey, decision.binding_priority(obj))
        elif (
            new_passes
            and previous is not None
            and decision.binding_update_enqueues(previous, obj, own_generation=own.get(qkey))
        ):
            metrics.QUEUE_INCOMING_BINDINGS.labels(metrics.EVENT_BINDING_UPDATE).inc()
            self.queue.push_debounced(qkey, decision.binding_priority(obj), self.debounce)

    def _binding_hint_events(self, old: Mapping[str, Any], new: Mapping[str, Any] | None) -> None:
        """Queueing hints: room a binding gave back on its clusters (deleted, scaled down, moved)."""
        if not self.queue.waiting_on_events():
            return
        for kind, cluster in decision.binding_freed(old, new):
            self.queue.on_event(hints.QueueEvent(kind, cluster))

    # ---- Clusters -------------------------------------------------------------------------------

    def on_cluster_event(self, event_type: str | None, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        clusters = self.store.clusters
        if event_type == "DELETED":
            clusters.delete(key)
            if self.accurate is not None:
                self.accurate.forget(key)
            return
        stored, previous = clusters.upsert(obj)
        if not stored:
            return
        if previous is not None:  # cluster add events never enqueue (§3.1)
            for changed in decision.cluster_update_reconciles(previous, obj):
                self._reconcile_cluster(changed)
        self._cluster_hint_events(previous, obj)

    def _cluster_hint_events(self, previous: Mapping[str, Any] | None, obj: Mapping[str, Any]) -> None:
        """Queueing hints: what a Cluster add or update changed of what a plugin or estimator reads,
        offered to the unschedulable bindings (a heartbeat that changes none of it costs a few dict
        comparisons, and nothing at all while no binding waits)."""
        if not self.queue.waiting_on_events():
            return
        if previous is not None and not decision.cluster_reads_changed(previous, obj):
            return
        # Through the store's memo: the old version was converted for a snapshot already, and the
        # new one's conversion is the next snapshot's.
        clusters = self.store.clusters
        old = clusters.converted(previous) if previous is not None else None
        new = clusters.converted(obj)
        if new is None or (previous is not None and old is None):
            return  # malformed: the store has logged it
        for kind in hints.split(hints.cluster_events(old, new)):
            self.queue.on_event(hints.QueueEvent(kind, new.name, old, new))

    def _reconcile_cluster(self, cluster: Mapping[str, Any]) -> None:
        try:
            info = cluster_from_dict(cluster)
        except ConversionError as exc:
            log.warning("cluster_unreadable", cluster=object_key(cluster), error=str(exc))
            return
        # The bindings whose reconcile affinity may match, found through the caches' index
        # (affected.py) instead of converting every binding's affinity per Cluster event.
        for kind, cache in self.store.bindings.items():
            for key in affected_index(cache).affected(info, self.scheduler_names):
                binding = cache.get(key)
                if binding is None or not self.runtime.owns(binding_uid(binding)):
                    continue
                metrics.QUEUE_INCOMING_BINDINGS.labels(metrics.EVENT_CLUSTER_CHANGED).inc()
                self.queue.push(queue_key(kind, key), decision.binding_priority(binding))

    # ---- assumptions ----------------------------------------------------------------------------

    def on_assumptions_released(self, clusters: tuple[str, ...]) -> None:
        """The assume record gave room back on ``clusters``: an ASSUMPTION_RELEASED event on each,
        for the queueing hints."""
        if self.queue.waiting_on_events():
            for cluster in clusters:
                self.queue.on_event(hints.QueueEvent(hints.ClusterEvent.ASSUMPTION_RELEASED, cluster))

    # ---- initial sync and watches ---------------------------------------------------------------

    async def initial_sync(self) -> None:
        """LIST Clusters and bindings so caches are complete before anything is scheduled."""
        clusters, version = await self.client.list_all(CLUSTERS_PATH)
        self._listed[CLUSTERS_PATH] = (version, clusters)
        for obj in clusters:
            obj.setdefault("apiVersion", CLUSTER_API)
            obj.setdefault("kind", "Cluster")
            self.on_cluster_event(None, watch.strip_managed_fields(obj))
        for kind in PLURALS:
            path = list_path(kind)
            items, version = await self.client.list_all(path)
            self._listed[path] = (version, items)
            for obj in items:
                obj.setdefault("apiVersion", WORK_API)
                obj.setdefault("kind", kind)
                self.on_binding_event(kind, None, watch.strip_managed_fields(obj))
        if self.accurate is not None:
            # Karmada dials every cluster's estimator at start; a failure is retried later.
            names = [o["metadata"]["name"] for o in self.store.clusters]
            self.background(asyncio.wrap_future(self.accurate.connect_in_background(names)))
        runtime_gc.settle_gc()
        log.info(
            "caches_synced",
            clusters=len(self.store.clusters),
            resourcebindings=len(self.store.bindings[RB]),
            clusterresourcebindings=len(self.store.bindings[CRB]),
        )

    def watching(self, *, stop: asyncio.Event, ready: asyncio.Event) -> Awaitable[Any]:
        """The three watches (fleetsched.kube.watch, not kopf: its per-object worker tasks, queues and
        timers cost more than the handling of the event), until ``stop``, with what the assume
        record runs beside them. managedFields are dropped on arrival: nothing here reads them."""

        def on_rb(event_type: str | None, obj: dict[str, Any]) -> None:
            self.on_binding_event(RB, event_type, obj)

        def on_crb(event_type: str | None, obj: dict[str, Any]) -> None:
            self.on_binding_event(CRB, event_type, obj)

        rb, crb = list_path(RB), list_path(CRB)
        # Each watch starts where the initial sync's LIST of it ended, instead of listing again.
        listed, self._listed = self._listed, {}
        own = self.store.is_own_write
        watches = [
            watch.Watch(self.client, rb, on_rb, api_version=WORK_API, kind=RB, listed=listed.get(rb),
                        transform=watch.strip_managed_fields, skip_version=own),
            watch.Watch(self.client, crb, on_crb, api_version=WORK_API, kind=CRB, listed=listed.get(crb),
                        transform=watch.strip_managed_fields, skip_version=own),
            watch.Watch(self.client, CLUSTERS_PATH, self.on_cluster_event, api_version=CLUSTER_API,
                        kind="Cluster", listed=listed.get(CLUSTERS_PATH),
                        transform=watch.strip_managed_fields),
        ]
        watches += listers.namespace_watches(self.client, self.namespaces)
        watching = watch.run_watches(watches, stop=stop, ready=ready)
        helpers = self.assumptions.helpers(stop)
        return self._beside(watching, helpers) if helpers else watching

    async def _beside(self, watching: Awaitable[Any], helpers: dict[str, Coroutine[Any, Any, None]]) -> Any:
        tasks = [asyncio.create_task(helper, name=name) for name, helper in helpers.items()]
        try:
            return await watching
        finally:
            for task in tasks:
                task.cancel()
