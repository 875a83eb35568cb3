"""The policy controller's caches and the views it builds from them.

Owns: the policy caches (``new_policy_caches``, with change counters so the detector's view is
rebuilt only when a policy moved, not per template), policy models parsed once per
resourceVersion, that view (``PolicyViews``), the template caches' ``TemplateIndex`` and the
query "which templates does this policy claim".

No I/O, no queue, no decisions: ``policy_operator`` fills the caches from watch events,
``policy_reconcile`` reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import ValidationError

from fleetsched.api.policy import ClusterPropagationPolicy, PropagationPolicy
from fleetsched.controller.policy.resources import CPP, PP, TemplateResource, permanent_id_label
from fleetsched.controller.policy.template_index import TemplateIndex
from fleetsched.controller.runtime.cache import ObjectCache, object_key
from fleetsched.detector.index import PolicySet

log = structlog.get_logger("fleetsched.controller")


class ChangeCounter:
    """A ``CacheIndex`` that only counts changes: the policy view is rebuilt when it moved."""

    __slots__ = ("version",)

    def __init__(self) -> None:
        self.version = 0

    def upsert(self, key: str, obj: Mapping[str, Any]) -> None:
        self.version += 1

    def delete(self, key: str) -> None:
        self.version += 1


def new_policy_caches() -> dict[str, ObjectCache]:
    """One cache per policy kind, each counting its changes."""
    return {PP: ObjectCache(ChangeCounter()), CPP: ObjectCache(ChangeCounter())}


@dataclass(frozen=True, slots=True)
class PolicyView:
    """The parsed policies, indexed once per change of either policy cache (not per template)."""

    propagation_policies: list[PropagationPolicy]
    cluster_propagation_policies: list[ClusterPropagationPolicy]
    index: PolicySet
    # The first policy naming each PriorityClass, in policy order: the lookups a template needs.
    class_sources: list[PropagationPolicy | ClusterPropagationPolicy]


class ParsedPolicies:
    """Policies as models, parsed once per resourceVersion."""

    def __init__(self) -> None:
        self._parsed: dict[tuple[str, str], tuple[str | None, Any]] = {}

    def get(self, kind: str, obj: Mapping[str, Any]) -> PropagationPolicy | ClusterPropagationPolicy | None:
        key = (kind, object_key(obj))
        version = (obj.get("metadata") or {}).get("resourceVersion")
        cached = self._parsed.get(key)
        if cached is not None and cached[0] == version and version is not None:
            return cached[1]  # type: ignore[no-any-return]
        model = PropagationPolicy if kind == PP else ClusterPropagationPolicy
        try:
            parsed: Any = model.model_validate({**obj, "kind": kind})
        except ValidationError as exc:
            log.warning("policy_unreadable", kind=kind, policy=key[1], error=str(exc).splitlines()[0])
            parsed = None
        self._parsed[key] = (version, parsed)
        return parsed  # type: ignore[no-any-return]

    def forget(self, kind: str, key: str) -> None:
        self._parsed.pop((kind, key), None)


class PolicyViews:
    """The parsed policies and the last ``PolicyView``, kept while neither policy cache changed."""

    def __init__(self) -> None:
        self.parsed = ParsedPolicies()
        self._last: tuple[tuple[int, int], PolicyView] | None = None

    def view(self, policies: Mapping[str, ObjectCache]) -> PolicyView:
        version = _version(policies)
        if version is not None and self._last is not None and self._last[0] == version:
            return self._last[1]
        pps, cpps = self._models(policies)
        sources: dict[str, PropagationPolicy | ClusterPropagationPolicy] = {}
        for policy in (*pps, *cpps):
            source = policy.spec.schedule_priority
            if source is not None:
                sources.setdefault(source.priority_class_name, policy)
        view = PolicyView(pps, cpps, PolicySet(pps, cpps), list(sources.values()))
        if version is not None:
            self._last = (version, view)
        return view

    def _models(
        self, policies: Mapping[str, ObjectCache]
    ) -> tuple[list[PropagationPolicy], list[ClusterPropagationPolicy]]:
        pps = [
            p
            for p in (self.parsed.get(PP, o) for o in policies[PP])
            if isinstance(p, PropagationPolicy)
        ]
        cpps = [
            p
            for p in (self.parsed.get(CPP, o) for o in policies[CPP])
            if isinstance(p, ClusterPropagationPolicy)
        ]
        return pps, cpps


def _version(policies: Mapping[str, ObjectCache]) -> tuple[int, int] | None:
    changes = [policies[kind].index for kind in (PP, CPP)]
    if all(isinstance(c, ChangeCounter) for c in changes):
        return tuple(c.version for c in changes)  # type: ignore[union-attr, return-value]
    return None  # caches handed in without change counters: rebuild every time


def template_index(cache: ObjectCache, resource: TemplateResource) -> TemplateIndex:
    """The cache's ``TemplateIndex``, built from its objects if it was handed in without one."""
    if not isinstance(cache.index, TemplateIndex):
        index = TemplateIndex(namespaced=resource.namespaced)
        for obj in cache:
            index.upsert(object_key(obj), obj)
        cache.index = index
    return cache.index


def claimed_by(
    templates: Mapping[str, ObjectCache],
    resources: Iterable[TemplateResource],
    kind: str,
    permanent_id: str,
    namespace: str | None,
) -> list[tuple[TemplateResource, Any]]:
    """The cached templates carrying the claim label of the ``kind`` policy ``permanent_id``
    (in ``namespace`` only, when given), with their resource."""
    label = permanent_id_label(kind)
    found = []
    for resource in resources:
        index = template_index(templates[resource.name], resource)
        for template_key in index.labelled(label, permanent_id):
            obj = index.object(template_key)
            if obj is None:
                continue
            meta = obj.get("metadata") or {}
            if (meta.get("labels") or {}).get(label) != permanent_id:
                continue
            if namespace is not None and meta.get("namespace") != namespace:
                continue
            found.append((resource, obj))
    return found
