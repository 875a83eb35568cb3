"""Helpers for putting Karmada objects into a real kube-apiserver the way users and controllers do.

- ``as_applied``: adapt recorded inputs (conformance cases, bench fleets) to what the real CRDs
  require: a Cluster needs ``spec.syncMode``; a binding needs a policy's permanent-id label to pass
  the scheduler's event filter, as bindings created by a policy controller carry.
- ``apply_with_status``: ``kubectl apply`` the objects, then write each ``status`` through the
  status subresource (apply ignores status on CRDs with a status subresource).
- ``binding_state``: what ``kubectl get`` shows about a binding's scheduling result.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from tests.support.controlplane import APIServer

POLICY_LABEL = "propagationpolicy.karmada.io/permanent-id"
CLUSTER_POLICY_LABEL = "clusterpropagationpolicy.karmada.io/permanent-id"
BINDING_KINDS = ("ResourceBinding", "ClusterResourceBinding")


def load_documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def as_applied(doc: Mapping[str, Any], *, scheduler_name: str | None = None) -> dict[str, Any]:
    out = copy.deepcopy(dict(doc))
    kind = out.get("kind")
    meta = out.setdefault("metadata", {})
    spec = out.setdefault("spec", {}) if kind in ("Cluster", *BINDING_KINDS) else out.get("spec")
    if kind == "Cluster":
        spec.setdefault("syncMode", "Push")
    elif kind in BINDING_KINDS:
        labels = meta.setdefault("labels", {}) or {}
        meta["labels"] = labels
        labels.setdefault(POLICY_LABEL if kind == "ResourceBinding" else CLUSTER_POLICY_LABEL, "e2e")
        if scheduler_name is not None:
            spec["schedulerName"] = scheduler_name
    return out


def _resource(doc: Mapping[str, Any]) -> str:
    kind = doc["kind"]
    return {
        "Cluster": "clusters.cluster.karmada.io",
        "ResourceBinding": "resourcebindings.work.karmada.io",
        "ClusterResourceBinding": "clusterresourcebindings.work.karmada.io",
    }.get(kind, kind.lower())


def patch_status(server: APIServer, doc: Mapping[str, Any], status: Mapping[str, Any]) -> None:
    meta = doc["metadata"]
    args = [
        "patch",
        _resource(doc),
        meta["name"],
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    ]
    if meta.get("namespace"):
        args += ["-n", meta["namespace"]]
    server.kubectl(*args)


def apply_with_status(server: APIServer, docs: Iterable[Mapping[str, Any]]) -> None:
    """Apply the objects (status stripped), then write each status through the subresource."""
    docs = list(docs)
    bodies = []
    for doc in docs:
        body = {k: v for k, v in doc.items() if k != "status"}
        bodies.append(body)
    namespaces = sorted({d["metadata"]["namespace"] for d in docs if d["metadata"].get("namespace")})
    for namespace in namespaces:
        server.kubectl("create", "namespace", namespace, check=False)
    server.apply("\n---\n".join(yaml.safe_dump(b, sort_keys=False) for b in bodies))
    for doc in docs:
        if doc.get("status"):
            patch_status(server, doc, doc["status"])


def get_json(server: APIServer, *args: str) -> dict[str, Any]:
    return json.loads(server.kubectl("get", *args, "-o", "json"))


def scheduled_condition(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Scheduled":
            return condition
    return None


def binding_state(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The recorded-case view of a binding: scheduled, reason, affinityName, clusters."""
    condition = scheduled_condition(obj) or {}
    clusters = {c["name"]: int(c.get("replicas") or 0) for c in (obj.get("spec") or {}).get("clusters") or ()}
    return {
        "scheduled": condition.get("status") == "True",
        "reason": condition.get("reason", ""),
        "affinityName": (obj.get("status") or {}).get("schedulerObservingAffinityName", ""),
        "clusters": clusters,
    }


def collection_path(doc: Mapping[str, Any]) -> str:
    kind = doc["kind"]
    namespace = (doc.get("metadata") or {}).get("namespace")
    if kind == "Cluster":
        return "/apis/cluster.karmada.io/v1alpha1/clusters"
    if kind == "ResourceBinding":
        return f"/apis/work.karmada.io/v1alpha2/namespaces/{namespace}/resourcebindings"
    if kind == "ClusterResourceBinding":
        return "/apis/work.karmada.io/v1alpha2/clusterresourcebindings"
    raise ValueError(f"no collection path for kind {kind}")


def create_objects(server: APIServer, docs: Iterable[Mapping[str, Any]]) -> None:
    """POST each object (status stripped) straight to the API: fast enough for hundreds."""
    for doc in docs:
        body = {k: v for k, v in doc.items() if k != "status"}
        server.request("POST", collection_path(doc), body)


def divided_binding(
    name: str, namespace: str, replicas: int, clusters: Sequence[str], *, cpu: int | None = None
) -> dict[str, Any]:
    """A Deployment's binding spread over ``clusters`` by available replicas (a common policy);
    with ``cpu``, each replica asks for that many cores."""
    spec: dict[str, Any] = {
        "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": namespace, "name": name},
        "replicas": replicas,
        "placement": {
            "clusterAffinity": {"clusterNames": list(clusters)},
            "replicaScheduling": {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"},
            },
        },
    }
    if cpu is not None:
        spec["replicaRequirements"] = {"resourceRequest": {"cpu": str(cpu)}}
    return as_applied(
        {
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
    )


def ready_cluster(
    name: str,
    free_pods: int,
    labels: Mapping[str, str] | None = None,
    *,
    allocatable: Mapping[str, str] | None = None,
    allocated: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Cluster that serves Deployments and has ``free_pods`` pods of room (plus any other
    ``allocatable`` resources, and what is ``allocated`` of them, as a member's status would say)."""
    summary: dict[str, Any] = {"allocatable": {**dict(allocatable or {}), "pods": str(free_pods)}}
    if allocated:
        summary["allocated"] = dict(allocated)
    return as_applied(
        {
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {},
            "status": {
                "apiEnablements": [
                    {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}
                ],
                "resourceSummary": summary,
            },
        }
    )


def list_bindings(server: APIServer, namespace: str) -> list[dict[str, Any]]:
    return list(
        server.request("GET", f"/apis/work.karmada.io/v1alpha2/namespaces/{namespace}/resourcebindings")[
            "items"
        ]
    )  # type: ignore[index]
