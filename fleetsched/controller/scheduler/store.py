"""The scheduler's store: where bindings and Clusters live on the API, what is cached of them, and
which watch events are the echoes of our own writes.

* names and paths: the two binding kinds, their plurals and API paths, the Clusters' path, the
  queue's key for a binding and the ``metadata.uid`` sharded mode divides bindings by;
* ``BindingStore``: the caches of both binding kinds and of the Clusters, the answers of our own
  writes stored as the watch would store them (their echoes are then skipped by resourceVersion)
  and the generation our own spec patch gave a binding (its watch event is not a user change).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fleetsched.api.names import (
    CLUSTER_GROUP,
    CLUSTER_RESOURCE_BINDING,
    CLUSTER_VERSION,
    RESOURCE_BINDING,
    WORK_GROUP,
    WORK_PLURALS,
    WORK_VERSION,
)
from fleetsched.api.names import binding_path_of_key as binding_path
from fleetsched.controller.runtime.cache import ClusterStore, ObjectCache, resource_version
from fleetsched.controller.runtime.queue import QueueKey
from fleetsched.controller.scheduler.affected import AffectedBindings
from fleetsched.kube import watch
from fleetsched.kube.client import ApiError, KubeClient

WORK_API, CLUSTER_API = f"{WORK_GROUP}/{WORK_VERSION}", f"{CLUSTER_GROUP}/{CLUSTER_VERSION}"
RB, CRB = RESOURCE_BINDING, CLUSTER_RESOURCE_BINDING
PLURALS = WORK_PLURALS
CLUSTERS_PATH = f"/apis/{CLUSTER_API}/clusters"
MAX_OWN_VERSIONS = 100_000

# What a stored version of a binding is handed to (the assume record, the peers): kind, the version
# it replaced (None: first seen), the version stored (None: the binding is gone).
Observer = Callable[[str, Mapping[str, Any] | None, Mapping[str, Any] | None], None]


def list_path(kind: str) -> str:
    """Every binding of ``kind``, in all namespaces: what the initial sync lists and the watch follows."""
    return f"/apis/{WORK_API}/{PLURALS[kind]}"


def queue_key(kind: str, key: str) -> QueueKey:
    """One queue for both kinds: the binding's kind, namespace ("" for a CRB) and name."""
    return QueueKey.of(kind, key)


def binding_uid(obj: Mapping[str, Any] | None) -> str | None:
    """What sharded mode divides bindings by: ``metadata.uid``."""
    if obj is None:
        return None
    return (obj.get("metadata") or {}).get("uid") or None


def _binding_caches() -> dict[str, ObjectCache]:
    return {RB: ObjectCache(AffectedBindings()), CRB: ObjectCache(AffectedBindings())}


@dataclass
class BindingStore:
    """The caches the scheduler reads, and what it knows of its own writes."""

    bindings: dict[str, ObjectCache] = field(default_factory=_binding_caches)
    clusters: ClusterStore = field(default_factory=ClusterStore)
    # what else sees each stored version of a binding (the assume record, the peers)
    observers: list[Observer] = field(default_factory=list)
    # generation our own spec patch gave a binding: its watch event is not a user change
    own_generation: dict[QueueKey, int] = field(default_factory=dict)
    # resourceVersions our own writes' answers carried (cached already): their watch events are skipped
    own_versions: dict[str, None] = field(default_factory=dict)

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        return self.bindings[kind].get(key)

    def cached_version(self, key: str) -> int | None:
        """The resourceVersion of the ResourceBinding ``key`` as cached (None: not cached)."""
        return resource_version(self.bindings[RB].get(key))

    def observe(self, kind: str, previous: Mapping[str, Any] | None, obj: Mapping[str, Any] | None) -> None:
        """A version of a binding stored (watched, listed or answered), or gone: to every observer."""
        for observer in self.observers:
            observer(kind, previous, obj)

    def upsert(self, kind: str, obj: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
        """A watched or listed version: stored unless older than the cached one, then observed."""
        stored, previous = self.bindings[kind].upsert(obj)
        if stored:
            self.observe(kind, previous, obj)
        return stored, previous

    def deleted(self, kind: str, key: str, obj: Mapping[str, Any]) -> None:
        """The binding is gone: dropped, with what was known of our writes to it, and observed."""
        self.bindings[kind].delete(key)
        self.own_generation.pop(queue_key(kind, key), None)
        self.observe(kind, obj, None)

    def store_response(self, kind: str, response: dict[str, Any]) -> None:
        """The answer to one of our writes, stored as the watch would store it; its watch event,
        when it comes, is skipped (``is_own_write``)."""
        if not response.get("metadata"):
            return
        response.setdefault("kind", kind)
        stored, previous = self.bindings[kind].upsert(watch.strip_managed_fields(response))
        if stored:
            self.observe(kind, previous, response)
        version = response["metadata"].get("resourceVersion")
        if version:
            self.own_versions[version] = None
            if len(self.own_versions) > MAX_OWN_VERSIONS:  # echoes lost with a broken watch
                del self.own_versions[next(iter(self.own_versions))]

    def is_own_write(self, version: str) -> bool:
        """The watch event at ``version`` is the echo of one of our writes, whose answer is cached."""
        return self.own_versions.pop(version, 0) is None

    async def refresh(self, client: KubeClient, kind: str, key: str) -> dict[str, Any] | None:
        """The binding read again (after a 409); None, and dropped from the cache, when it is gone."""
        try:
            fresh = await client.get(binding_path(kind, key))
        except ApiError as exc:
            if exc.is_not_found:
                self.bindings[kind].delete(key)
                return None
            raise
        fresh.setdefault("kind", kind)
        self.bindings[kind].upsert(fresh)
        return self.bindings[kind].get(key)
