"""A member cluster given as Kubernetes objects (YAML/JSON documents) instead of a live watch.

Used by ``fleetsched estimate`` and by the in-process estimator behind ``fleetsched simulate``: loads
Nodes, Pods, ResourceQuotas and workloads into a :class:`NodeTable`, a quota store and an in-memory
workload source. Nodes go in ascending byte order of their names, the order a kube-apiserver LIST
returns them in (spec 3.1), whatever the document order. Pure: no network.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from fleetsched.estimator.cache import NodeTable
from fleetsched.estimator.model import EstimatorError, ObjectReference
from fleetsched.estimator.plugins.resource_quota import QuotaStore, quota_from_object
from fleetsched.estimator.replica import (
    may_be_unschedulable,
    not_found_message,
    resolve_kind,
    slim_pod,
    split_api_version,
)
from fleetsched.estimator.service import (
    EstimatorService,
    FeatureGates,
    apply_node,
    apply_pod,
)

__all__ = ["MemberInventory", "ObjectWorkloadSource"]


def _stub(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Just enough of an object for a lookup by kind and name."""
    meta = obj.get("metadata") or {}
    return {"apiVersion": obj.get("apiVersion", "v1"), "kind": obj.get("kind"),
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")}}


class ObjectWorkloadSource:
    """Workloads, ReplicaSets and pods held in memory, answering like Karmada's caches and GETs."""

    def __init__(self) -> None:
        self._objects: dict[tuple[str, str], dict[tuple[str, str], Mapping[str, Any]]] = {}
        self._candidates: dict[tuple[str, str], Mapping[str, Any]] = {}

    def add_pod(self, obj: Mapping[str, Any]) -> None:
        """Remember that the pod exists; keep its details only if it can count as unschedulable."""
        meta = obj.get("metadata") or {}
        self.add({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")}})
        if may_be_unschedulable(obj):
            key = (str(meta.get("namespace") or "default"), str(meta.get("name", "")))
            self._candidates[key] = slim_pod(obj)

    def add(self, obj: Mapping[str, Any]) -> None:
        group, _ = split_api_version(str(obj.get("apiVersion", "")))
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace") or "default"), str(meta.get("name", "")))
        self._objects.setdefault((group, str(obj.get("kind", ""))), {})[key] = obj

    def get(self, ref: ObjectReference) -> Mapping[str, Any]:
        _, namespaced = resolve_kind(ref.api_version, ref.kind)
        group, _ = split_api_version(ref.api_version)
        objects = self._objects.get((group, ref.kind), {})
        if namespaced:
            # the cache key of an empty namespace is the bare name, which names no namespaced object
            found = objects.get((ref.namespace, ref.name)) if ref.namespace else None
        else:
            found = next((o for (_, name), o in objects.items() if name == ref.name), None)
        if found is None:
            raise EstimatorError(not_found_message(ref.api_version, ref.kind, ref.namespace, ref.name))
        return found

    def replica_sets(self, namespace: str) -> Iterable[Mapping[str, Any]]:
        return [o for (ns, _), o in self._objects.get(("apps", "ReplicaSet"), {}).items() if ns == namespace]

    def pods(self, namespace: str) -> Iterable[Mapping[str, Any]]:
        return [o for (ns, _), o in self._candidates.items() if ns == namespace]


class MemberInventory:
    """One member cluster's objects, ready to estimate against.

    Objects can be added one at a time (``add``) and the inventory finished later (``finish``): a Pod is
    counted as soon as it is added and its document can be dropped, which keeps a 50,000-pod snapshot
    from leaving its parsed YAML scattered through memory. Nodes are inserted at ``finish`` in name
    order, whatever the order they were added in.
    """

    service: EstimatorService

    def __init__(self, cluster_name: str | None = None, objects: Iterable[Mapping[str, Any]] = (),
                 gates: FeatureGates | None = None) -> None:
        self._uids = (f"fleetsched-generated-uid-{n}" for n in itertools.count())
        self.table = NodeTable()
        self.quotas = QuotaStore()
        self.workloads = ObjectWorkloadSource()
        self._nodes: list[Mapping[str, Any]] = []
        for raw in objects:
            self.add(raw)
        if cluster_name is not None:
            self.finish(cluster_name, gates)

    def add(self, raw: Mapping[str, Any]) -> None:
        obj = dict(raw)
        meta = dict(obj.get("metadata") or {})
        meta.setdefault("uid", next(self._uids))
        if obj.get("kind") != "Node":
            meta.setdefault("namespace", "default")
        obj["metadata"] = meta
        kind = obj.get("kind")
        if kind == "Node":
            self._nodes.append(obj)
            self.workloads.add(_stub(obj))  # a GET finds it (GetUnschedulableReplicas: kind not supported)
        elif kind == "Pod":
            apply_pod(self.table, obj)  # counted on its node once that node is inserted
            self.workloads.add_pod(obj)
        elif kind == "ResourceQuota":
            self.quotas.upsert(quota_from_object(obj))
            self.workloads.add(_stub(obj))
        else:
            self.workloads.add(obj)

    def finish(self, cluster_name: str, gates: FeatureGates | None = None) -> EstimatorService:
        def by_name(node: Mapping[str, Any]) -> bytes:
            return str((node.get("metadata") or {}).get("name", "")).encode()

        for node in sorted(self._nodes, key=by_name):
            apply_node(self.table, node)
        self._nodes = []
        self.service = EstimatorService(cluster_name=cluster_name, gates=gates or FeatureGates(),
                                        table=self.table, quotas=self.quotas, workloads=self.workloads)
        return self.service
