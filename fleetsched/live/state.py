"""Reading the live state: Clusters, bindings, policies and workload templates, listed from the API
server with the one Kubernetes client (``fleetsched.kube``). Reads only; nothing is written."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from fleetsched.api.names import binding_path
from fleetsched.kube.client import ApiError, KubeClient, load_connection

JsonObject = dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class Listed:
    """One kind the live state is made of: where it is listed and what each item is."""

    path: str
    api_version: str
    kind: str


CLUSTERS = Listed("/apis/cluster.karmada.io/v1alpha1/clusters", "cluster.karmada.io/v1alpha1", "Cluster")
RESOURCE_BINDINGS = Listed(
    "/apis/work.karmada.io/v1alpha2/resourcebindings", "work.karmada.io/v1alpha2", "ResourceBinding"
)
CLUSTER_RESOURCE_BINDINGS = Listed(
    "/apis/work.karmada.io/v1alpha2/clusterresourcebindings",
    "work.karmada.io/v1alpha2",
    "ClusterResourceBinding",
)
POLICIES = (
    Listed("/apis/policy.karmada.io/v1alpha1/propagationpolicies", "policy.karmada.io/v1alpha1",
           "PropagationPolicy"),
    Listed("/apis/policy.karmada.io/v1alpha1/clusterpropagationpolicies", "policy.karmada.io/v1alpha1",
           "ClusterPropagationPolicy"),
)
# The workload kinds whose replicas the scheduler divides (the policy controller's default kinds
# that carry replicas or pods); other templates make bindings with nothing to divide.
TEMPLATES = (
    Listed("/apis/apps/v1/deployments", "apps/v1", "Deployment"),
    Listed("/apis/apps/v1/statefulsets", "apps/v1", "StatefulSet"),
    Listed("/apis/apps/v1/daemonsets", "apps/v1", "DaemonSet"),
    Listed("/apis/batch/v1/jobs", "batch/v1", "Job"),
    Listed("/apis/batch/v1/cronjobs", "batch/v1", "CronJob"),
)


class LiveError(Exception):
    """The live state could not be read (one line)."""


def _as_object(item: JsonObject, listed: Listed) -> JsonObject:
    """A listed item as a whole object: LIST answers leave out each item's kind and apiVersion;
    managedFields are dropped (bookkeeping of writers, read by nothing here)."""
    out = {"apiVersion": listed.api_version, "kind": listed.kind, **item}
    metadata = dict(out.get("metadata") or {})
    metadata.pop("managedFields", None)
    out["metadata"] = metadata
    return out


async def _list(client: KubeClient, listed: Listed, *, optional: bool = False) -> list[JsonObject]:
    try:
        items, _ = await client.list_all(listed.path)
    except ApiError as exc:
        if optional and exc.status == 404:  # a kind this API server does not serve
            return []
        raise LiveError(f"listing {listed.kind} ({listed.path}): {exc}") from None
    return [_as_object(item, listed) for item in items]


async def _with_client(kubeconfig: str | None, work: Any) -> Any:
    from fleetsched.kube.auth import KubeconfigError

    try:
        connection = load_connection(kubeconfig)
    except KubeconfigError as exc:
        raise LiveError(str(exc)) from None
    client = KubeClient(connection, user_agent="fleetsched-live")
    try:
        return await work(client)
    except OSError as exc:
        raise LiveError(f"{connection.server}: {exc}") from None
    finally:
        await client.close()


def read_binding_state(kubeconfig: str | None, kind: str, namespace: str, name: str) -> list[JsonObject]:
    """The live Clusters and the one binding (last)."""

    async def work(client: KubeClient) -> list[JsonObject]:
        clusters = await _list(client, CLUSTERS)
        try:
            binding = await client.get(binding_path(kind, namespace, name))
        except ApiError as exc:
            if exc.is_not_found:
                ref = f"{namespace}/{name}" if namespace else name
                raise LiveError(f"{kind} {ref} not found") from None
            raise LiveError(f"reading {kind} {name}: {exc}") from None
        listed = CLUSTER_RESOURCE_BINDINGS if kind == "ClusterResourceBinding" else RESOURCE_BINDINGS
        return [*clusters, _as_object(binding, listed)]

    return asyncio.run(_with_client(kubeconfig, work))  # type: ignore[no-any-return]


def read_state(kubeconfig: str | None) -> list[JsonObject]:
    """Every live Cluster, binding, policy and workload template, in that order."""

    async def work(client: KubeClient) -> list[JsonObject]:
        out: list[JsonObject] = []
        for listed in (CLUSTERS, RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, *POLICIES):
            out.extend(await _list(client, listed))
        for listed in TEMPLATES:
            out.extend(await _list(client, listed, optional=True))
        return out

    return asyncio.run(_with_client(kubeconfig, work))  # type: ignore[no-any-return]


def parse_binding_ref(text: str) -> tuple[str, str, str]:
    """``rb/NAMESPACE/NAME`` or ``crb/NAME`` (also the resource names kubectl knows) as (kind,
    namespace, name); ValueError naming the form otherwise."""
    head, _, rest = text.partition("/")
    kind = head.lower()
    if kind in ("rb", "resourcebinding", "resourcebindings", "resourcebindings.work.karmada.io"):
        namespace, _, name = rest.partition("/")
        if namespace and name and "/" not in name:
            return "ResourceBinding", namespace, name
    elif kind in (
        "crb", "clusterresourcebinding", "clusterresourcebindings", "clusterresourcebindings.work.karmada.io"
    ) and rest and "/" not in rest:
        return "ClusterResourceBinding", "", rest
    raise ValueError(f"{text!r}: expected rb/NAMESPACE/NAME or crb/NAME")


def describe_sources(objects: Sequence[Mapping[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for obj in objects:
        counts[str(obj.get("kind"))] = counts.get(str(obj.get("kind")), 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in counts.items())


def unserved_selectors(kubeconfig: str | None, policies: Sequence[Mapping[str, Any]]) -> list[str]:
    """``PropagationPolicy NS/NAME: resourceSelectors[i]: ...`` for each selector of ``policies``
    whose kind the API server does not serve (API discovery), as the policy controller says it."""
    if not policies:
        return []
    from fleetsched.controller.policy.selection import discovery_path, not_served_message, served_kinds

    async def work(client: KubeClient) -> list[str]:
        documents: dict[str, list[str] | None] = {}
        out: list[str] = []
        for policy in policies:
            md = policy.get("metadata") or {}
            ref = f"{md.get('namespace') or 'default'}/{md.get('name')}" if policy.get(
                "kind") == "PropagationPolicy" else str(md.get("name"))
            for i, selector in enumerate((policy.get("spec") or {}).get("resourceSelectors") or ()):
                api_version, kind = str(selector.get("apiVersion") or ""), str(selector.get("kind") or "")
                if api_version not in documents:
                    try:
                        documents[api_version] = served_kinds(await client.get(discovery_path(api_version)))
                    except ApiError as exc:
                        if not exc.is_not_found:
                            raise LiveError(f"API discovery of {api_version}: {exc}") from None
                        documents[api_version] = None
                kinds = documents[api_version]
                if kinds is None or kind not in kinds:
                    label = f"resourceSelectors[{i}]: {api_version} {kind}"
                    message = not_served_message(label, api_version, kinds, kind)
                    out.append(f"{policy.get('kind')} {ref}: {message}")
        return out

    return asyncio.run(_with_client(kubeconfig, work))  # type: ignore[no-any-return]
