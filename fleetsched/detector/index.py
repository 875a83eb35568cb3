"""An index of policies by what their resource selectors can match. Pure.

Matching every policy against every template is quadratic: 10,000 policies over 50,000
templates is half a billion selector evaluations. A selector can only match a template of its own
``apiVersion`` and ``kind``; one with a ``name`` only the template of that name; one with
``matchLabels`` only templates carrying each of those pairs. So each selector is filed under one
key it cannot match without, and a template looks up only the keys it could be filed under:

* ``(apiVersion, kind, name)`` for a selector naming an object;
* ``(apiVersion, kind, label key, label value)`` for one pair of a selector's ``matchLabels``;
* ``(apiVersion, kind)`` for every other selector (kind only, expressions only, empty selector).

The index returns candidates, a superset of the policies that match, in the order they were
given, so callers that break ties by position or by ``min`` see exactly what a full scan sees.
Whether a candidate matches is still decided by ``implicit_priority``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from fleetsched.api.policy import ClusterPropagationPolicy, PropagationPolicy, ResourceSelector

__all__ = ["PolicyIndex", "PolicySet", "selector_key"]

P = TypeVar("P", PropagationPolicy, ClusterPropagationPolicy)

_Key = tuple[str, ...]


def _selector_key(selector: ResourceSelector) -> _Key:
    if selector.name:
        return (selector.api_version, selector.kind, "name", selector.name)
    match_labels = selector.label_selector.match_labels if selector.label_selector is not None else None
    if match_labels:
        key, value = min(match_labels.items())
        return (selector.api_version, selector.kind, "label", key, str(value))
    return (selector.api_version, selector.kind)


def selector_key(selector: ResourceSelector) -> _Key:
    """The one key a selector is filed under: a template it matches is filed under it too."""
    return _selector_key(selector)


class PolicyIndex(Generic[P]):
    """Policies of one kind (and, for PropagationPolicies, one namespace) by selector key."""

    __slots__ = ("_by_key", "_policies")

    def __init__(self, policies: Iterable[P]) -> None:
        self._policies: tuple[P, ...] = tuple(policies)
        self._by_key: dict[_Key, list[int]] = {}
        for position, policy in enumerate(self._policies):
            for selector in policy.spec.resource_selectors:
                bucket = self._by_key.setdefault(_selector_key(selector), [])
                if not bucket or bucket[-1] != position:
                    bucket.append(position)

    def __len__(self) -> int:
        return len(self._policies)

    @property
    def policies(self) -> tuple[P, ...]:
        return self._policies

    def candidates(
        self, *, api_version: str, kind: str, name: str, labels: Mapping[str, str] | None
    ) -> list[P]:
        """Every policy that may match such a template, in the order the index was built from."""
        by_key = self._by_key
        found: set[int] = set()
        for key in ((api_version, kind), (api_version, kind, "name", name)):
            positions = by_key.get(key)
            if positions:
                found.update(positions)
        for label_key, label_value in (labels or {}).items():
            positions = by_key.get((api_version, kind, "label", label_key, label_value))
            if positions:
                found.update(positions)
        return [self._policies[i] for i in sorted(found)]


class PolicySet:
    """Both kinds of policy, indexed once: PropagationPolicies per namespace, and the
    ClusterPropagationPolicies; plus lookups by name for claims."""

    __slots__ = (
        "_pp_by_name",
        "_pp_by_namespace",
        "built_parts",
        "cluster_propagation_policies",
        "cpp_by_name",
        "cpp_index",
        "propagation_policies",
    )

    def __init__(
        self,
        propagation_policies: Sequence[PropagationPolicy],
        cluster_propagation_policies: Sequence[ClusterPropagationPolicy],
    ) -> None:
        self.propagation_policies = tuple(propagation_policies)
        self.cluster_propagation_policies = tuple(cluster_propagation_policies)
        grouped: dict[str, list[PropagationPolicy]] = {}
        self._pp_by_name: dict[tuple[str, str], PropagationPolicy] = {}
        for pp in self.propagation_policies:
            namespace = pp.metadata.namespace or ""
            grouped.setdefault(namespace, []).append(pp)
            # The first of two with one name wins, as a linear scan for the claimant would find it.
            self._pp_by_name.setdefault((namespace, pp.metadata.name or ""), pp)
        self._pp_by_namespace = {ns: PolicyIndex(pps) for ns, pps in grouped.items()}
        self.cpp_index: PolicyIndex[ClusterPropagationPolicy] = PolicyIndex(self.cluster_propagation_policies)
        self.cpp_by_name: dict[str, ClusterPropagationPolicy] = {}
        for cpp in self.cluster_propagation_policies:
            self.cpp_by_name.setdefault(cpp.metadata.name or "", cpp)
        # What each policy puts into the bindings built from it (``detector.build.PolicyParts``),
        # by ``id(policy)``: filled as bindings are built, valid while this set holds the policies.
        self.built_parts: dict[int, Any] = {}

    def namespace_index(self, namespace: str) -> PolicyIndex[PropagationPolicy] | None:
        return self._pp_by_namespace.get(namespace)

    def propagation_policy(self, namespace: str, name: str) -> PropagationPolicy | None:
        return self._pp_by_name.get((namespace, name))
