"""Karmada's API names, declared once: groups, versions, kinds, plurals and the REST paths of the
bindings. Standard library only, so every layer above ``api`` may use it."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = [
    "CLUSTER_GROUP",
    "CLUSTER_RESOURCE_BINDING",
    "CLUSTER_VERSION",
    "POLICY_GROUP",
    "POLICY_VERSION",
    "RESOURCE_BINDING",
    "WORK_GROUP",
    "WORK_PATH",
    "WORK_PLURALS",
    "WORK_VERSION",
    "binding_path",
    "binding_path_of_key",
]

CLUSTER_GROUP, CLUSTER_VERSION = "cluster.karmada.io", "v1alpha1"
POLICY_GROUP, POLICY_VERSION = "policy.karmada.io", "v1alpha1"
WORK_GROUP, WORK_VERSION = "work.karmada.io", "v1alpha2"
WORK_PATH = f"/apis/{WORK_GROUP}/{WORK_VERSION}"

RESOURCE_BINDING = "ResourceBinding"
CLUSTER_RESOURCE_BINDING = "ClusterResourceBinding"
WORK_PLURALS: Mapping[str, str] = MappingProxyType(
    {RESOURCE_BINDING: "resourcebindings", CLUSTER_RESOURCE_BINDING: "clusterresourcebindings"}
)


def binding_path(kind: str, namespace: str | None, name: str, *, status: bool = False) -> str:
    """The REST path of a ResourceBinding (in ``namespace``) or, for any other ``kind``, of a
    ClusterResourceBinding; of its status subresource with ``status``."""
    if kind == RESOURCE_BINDING:
        path = f"{WORK_PATH}/namespaces/{namespace}/resourcebindings/{name}"
    else:
        path = f"{WORK_PATH}/clusterresourcebindings/{name}"
    return path + "/status" if status else path


def binding_path_of_key(kind: str, key: str, *, status: bool = False) -> str:
    """``binding_path`` of a queue key: ``namespace/name`` for a ResourceBinding, ``name`` else."""
    if kind == RESOURCE_BINDING:
        namespace, name = key.split("/", 1)
        return binding_path(kind, namespace, name, status=status)
    return binding_path(kind, None, key, status=status)
