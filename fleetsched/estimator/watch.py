"""Watches on the member cluster's API feeding the estimator's caches (Nodes, Pods,
ResourceQuotas).

Nodes (all), Pods (non-terminal only, by field selector), ReplicaSets and Deployments, and
ResourceQuotas when the ``ResourceQuotaEstimate`` gate is on. Each kind is one reflector of
``fleetsched.kube.watch`` (the scheduler's: paginated LIST, then WATCH with bookmarks from the list's
resourceVersion, resumed where it broke, LIST again on 410 Gone, server and client timeouts so a dead
connection is noticed) in its ``replace`` mode: every LIST replaces the kind's state whole, digested
page by page (a pod's request on its node, not the pod), so objects deleted while the watch was down
are dropped. When the apiserver goes away the caches keep their last synced state (the server keeps
answering), and the outage is reported through :class:`SyncState`, logs and metrics until a LIST or
a WATCH is accepted again.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import structlog

from fleetsched.api.resources import pod_request
from fleetsched.estimator.cache import NodeTable
from fleetsched.estimator.model import EstimatorError, ObjectReference
from fleetsched.estimator.plugins.resource_quota import QuotaStore, quota_from_object
from fleetsched.estimator.replica import (
    KNOWN_KINDS,
    may_be_unschedulable,
    not_found_message,
    slim_pod,
    split_api_version,
)
from fleetsched.estimator.server import SyncState
from fleetsched.estimator.service import apply_node, apply_pod, is_terminal, pod_key
from fleetsched.kube.client import ApiError, KubeClient
from fleetsched.kube.watch import Watch, WatchSettings, run_watches, strip_managed_fields

__all__ = ["LiveWorkloadSource", "MemberWatcher", "WatchedKind"]

log = structlog.get_logger("fleetsched.estimator.watch")

JsonObject = dict[str, Any]
NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name", ""))


class LiveWorkloadSource:
    """Deployments, ReplicaSets and pods from the watches; any other kind by a direct GET."""

    def __init__(self, client: KubeClient | None) -> None:
        self.client = client
        self.deployments: dict[tuple[str, str], JsonObject] = {}
        self.replica_set_objects: dict[tuple[str, str], JsonObject] = {}
        # only pods that can count as unschedulable (most pods are scheduled and never will)
        self.pod_objects: dict[tuple[str, str], JsonObject] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self._discovered: dict[str, dict[str, tuple[str, bool]]] = {}

    def _resolve(self, api_version: str, kind: str) -> tuple[str, bool]:
        group, version = split_api_version(api_version)
        known = KNOWN_KINDS.get((group, kind))
        if known is not None and version in known[1]:
            return known[0], known[2]
        resources = self._discovered.get(api_version)
        if resources is None and self.client is not None and self.loop is not None:
            path = f"/apis/{api_version}" if group else f"/api/{version}"
            try:
                listing = asyncio.run_coroutine_threadsafe(self.client.get(path), self.loop).result(10)
            except Exception:
                listing = {}
            resources = {r["kind"]: (r["name"], bool(r.get("namespaced")))
                         for r in listing.get("resources") or () if "/" not in r.get("name", "")}
            self._discovered[api_version] = resources
        found = (resources or {}).get(kind)
        if found is None:
            raise EstimatorError(f'no matches for kind "{kind}" in version "{api_version}"')
        return found

    def get(self, ref: ObjectReference) -> Mapping[str, Any]:
        resource, namespaced = self._resolve(ref.api_version, ref.kind)
        group, _ = split_api_version(ref.api_version)
        if group == "apps" and ref.kind == "Deployment":
            found = self.deployments.get((ref.namespace, ref.name))
            if found is None:
                raise EstimatorError(not_found_message(ref.api_version, ref.kind, ref.namespace, ref.name))
            return found
        if self.client is None or self.loop is None:
            raise EstimatorError(f'{resource}{"." + group if group else ""} "{ref.name}" not found')
        base = f"/apis/{ref.api_version}" if group else f"/api/{ref.api_version}"
        scope = f"/namespaces/{ref.namespace}" if namespaced else ""
        try:
            return asyncio.run_coroutine_threadsafe(
                self.client.get(f"{base}{scope}/{resource}/{ref.name}"), self.loop).result(10)
        except ApiError as exc:
            if exc.is_not_found:
                qualified = f"{resource}.{group}" if group else resource
                raise EstimatorError(f'{qualified} "{ref.name}" not found') from exc
            raise EstimatorError(exc.message) from exc

    def replica_sets(self, namespace: str) -> Iterable[Mapping[str, Any]]:
        return [o for (ns, _), o in list(self.replica_set_objects.items()) if ns == namespace]

    def pods(self, namespace: str) -> Iterable[Mapping[str, Any]]:
        return [o for (ns, _), o in list(self.pod_objects.items()) if ns == namespace and not is_terminal(o)]


@dataclass
class WatchedKind:
    name: str
    path: str
    api_version: str
    kind: str
    field_selector: str
    reset: Callable[[list[Any]], None]
    event: Callable[[str, JsonObject], None]
    # applied to each listed item as its page arrives, so a 50,000-pod LIST is never held whole
    digest: Callable[[JsonObject], Any] | None = None


class MemberWatcher:
    """Keeps the node table, quota store and workload source in step with one member cluster."""

    def __init__(self, *, client: KubeClient, table: NodeTable, quotas: QuotaStore,
                 workloads: LiveWorkloadSource, state: SyncState, watch_quotas: bool,
                 watch_timeout_seconds: int = 300, retry_max_seconds: float = 10.0) -> None:
        self.client = client
        self.table = table
        self.quotas = quotas
        self.workloads = workloads
        self.state = state
        self.settings = WatchSettings(
            server_timeout=watch_timeout_seconds,
            client_timeout=watch_timeout_seconds + 30.0,
            inactivity_timeout=watch_timeout_seconds + 30.0,
            backoff_initial=0.2,
            backoff_max=retry_max_seconds,
        )
        self._listed: set[str] = set()
        self._live: set[str] = set()
        self.kinds = [
            WatchedKind("nodes", "/api/v1/nodes", "v1", "Node", "", self._reset_nodes, self._node_event),
            WatchedKind("pods", "/api/v1/pods", "v1", "Pod", NON_TERMINAL, self._reset_pods, self._pod_event,
                        digest=self._pod_digest),
            WatchedKind("replicasets", "/apis/apps/v1/replicasets", "apps/v1", "ReplicaSet", "",
                        self._reset_rs, self._rs_event),
            WatchedKind("deployments", "/apis/apps/v1/deployments", "apps/v1", "Deployment", "",
                        self._reset_deploy, self._deploy_event),
        ]
        if watch_quotas:
            self.kinds.append(WatchedKind("resourcequotas", "/api/v1/resourcequotas", "v1", "ResourceQuota",
                                          "", self._reset_quotas, self._quota_event))

    # ------------------------------------------------------------------ state updates
    def _reset_nodes(self, items: list[JsonObject]) -> None:
        names = set()
        for item in sorted(items, key=lambda o: str(_key(o)[1]).encode()):
            apply_node(self.table, item)
            names.add(_key(item)[1])
        for name in set(self.table.node_names()) - names:
            self.table.delete_node(name)

    def _node_event(self, kind: str, obj: JsonObject) -> None:
        if kind == "DELETED":
            self.table.delete_node(_key(obj)[1])
        else:
            apply_node(self.table, obj)

    @staticmethod
    def _pod_digest(item: JsonObject) -> tuple[str, str, dict[str, int] | None, tuple[str, str], Any]:
        """What the caches keep of a listed pod: its request on its node, and details if it may count as
        unschedulable."""
        node_name = str((item.get("spec") or {}).get("nodeName") or "")
        request = None if not node_name or is_terminal(item) else pod_request(item.get("spec") or {})
        candidate = slim_pod(item) if may_be_unschedulable(item) else None
        return pod_key(item), node_name, request, _key(item), candidate

    def _reset_pods(self, digests: list[Any]) -> None:
        keys = set()
        fresh: dict[tuple[str, str], JsonObject] = {}
        for key, node_name, request, object_key, candidate in digests:
            if request is None:
                self.table.delete_pod(key)
            else:
                self.table.upsert_pod(key, node_name=node_name, request=request)
            keys.add(key)
            if candidate is not None:
                fresh[object_key] = candidate
        for key in set(self.table.pod_keys()) - keys:
            self.table.delete_pod(key)
        self.workloads.pod_objects = fresh

    def _pod_event(self, kind: str, obj: JsonObject) -> None:
        if kind == "DELETED" or is_terminal(obj):
            self.table.delete_pod(pod_key(obj))
            self.workloads.pod_objects.pop(_key(obj), None)
        else:
            apply_pod(self.table, obj)
            if may_be_unschedulable(obj):
                self.workloads.pod_objects[_key(obj)] = slim_pod(obj)
            else:
                self.workloads.pod_objects.pop(_key(obj), None)

    def _reset_rs(self, items: list[JsonObject]) -> None:
        self.workloads.replica_set_objects = {_key(o): o for o in items}

    def _rs_event(self, kind: str, obj: JsonObject) -> None:
        if kind == "DELETED":
            self.workloads.replica_set_objects.pop(_key(obj), None)
        else:
            self.workloads.replica_set_objects[_key(obj)] = obj

    def _reset_deploy(self, items: list[JsonObject]) -> None:
        fresh = {}
        for o in items:
            o.setdefault("kind", "Deployment")
            fresh[_key(o)] = o
        self.workloads.deployments = fresh

    def _deploy_event(self, kind: str, obj: JsonObject) -> None:
        if kind == "DELETED":
            self.workloads.deployments.pop(_key(obj), None)
        else:
            obj.setdefault("kind", "Deployment")
            self.workloads.deployments[_key(obj)] = obj

    def _reset_quotas(self, items: list[JsonObject]) -> None:
        known = {(q.namespace, q.name) for q in self.quotas.list("")}
        fresh = set()
        for item in items:
            quota = quota_from_object(item)
            self.quotas.upsert(quota)
            fresh.add((quota.namespace, quota.name))
        for namespace, name in known - fresh:
            self.quotas.delete(namespace, name)

    def _quota_event(self, kind: str, obj: JsonObject) -> None:
        if kind == "DELETED":
            namespace, name = _key(obj)
            self.quotas.delete(namespace, name)
        else:
            self.quotas.upsert(quota_from_object(obj))

    # ------------------------------------------------------------------ loops
    def _update_state(self) -> None:
        if not self.state.synced and self._listed >= {k.name for k in self.kinds}:
            self.state.synced = True
            log.info("caches_synced", nodes=self.table.num_nodes(), pods=self.table.num_pods())
            # The synced snapshot is long-lived: keep full collections from rescanning it (tail latency).
            gc.collect()
            gc.freeze()
        connected = self._live >= {k.name for k in self.kinds}
        if connected != self.state.connected:
            self.state.connected = connected
            if connected:
                self.state.reason = ""
                log.info("member_watch_connected")

    def _connected(self, kind: WatchedKind) -> None:
        """The kind was listed, or its WATCH was accepted: its view is live."""
        self._listed.add(kind.name)
        self._live.add(kind.name)
        self._update_state()

    def _failed(self, kind: WatchedKind, exc: Exception) -> None:
        self._live.discard(kind.name)
        if self.state.connected or not self.state.reason.startswith("member apiserver"):
            log.warning("member_watch_lost", kind=kind.name, error=str(exc) or type(exc).__name__,
                        keeps_answering_from_last_state=self.state.synced)
        detail = str(exc) or type(exc).__name__
        self.state.reason = f"member apiserver unreachable ({kind.name}): {detail}"
        self._update_state()

    def watches(self) -> list[Watch]:
        """One reflector per kind (kube/watch.py): each LIST replaces the kind's state whole, so what
        was deleted while the watch was down is dropped; events then update it one by one."""
        return [
            Watch(self.client, kind.path, self._handler(kind), api_version=kind.api_version, kind=kind.kind,
                  settings=self.settings, transform=strip_managed_fields,
                  params={"fieldSelector": kind.field_selector} if kind.field_selector else None,
                  replace=kind.reset, digest=kind.digest,
                  on_connected=partial(self._connected, kind), on_failed=partial(self._failed, kind))
            for kind in self.kinds
        ]

    @staticmethod
    def _handler(kind: WatchedKind) -> Callable[[str | None, JsonObject], None]:
        event = kind.event

        def handle(event_type: str | None, obj: JsonObject) -> None:
            event(str(event_type), obj)

        return handle

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop``. The reflectors retry every API failure themselves; an answer they cannot
        read at all (e.g. a list whose metadata is not an object) ends them, and then all of them
        start again, LIST first, after a pause: the caches keep answering meanwhile and readiness
        says why, rather than the watch ending silently."""
        while not stop.is_set():
            try:
                await run_watches(self.watches(), stop=stop, ready=asyncio.Event())
                return
            except Exception as exc:
                log.exception("member_watches_restarting", retry_in=self.settings.backoff_max)
                for kind in self.kinds:
                    self._failed(kind, exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.settings.backoff_max)
