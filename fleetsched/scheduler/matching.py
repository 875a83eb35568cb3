"""Cluster affinity, label-selector and toleration matching on core values (scheduler.md §5.3, §5.4).

Owns Karmada's ``ClusterMatches`` on the core's values. The Kubernetes label-requirement rules it
relies on (which requirements are invalid, how each operator matches) and the toleration rule are
``fleetsched.labels``', shared with the API selectors and the estimator's node filter: a
labelSelector compiles without Gt/Lt, a fieldSelector with them. An invalid selector never matches.
Pure functions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TypeGuard

from fleetsched.labels import Requirement, compile_requirement, tolerates, zones_match
from fleetsched.scheduler.types import (
    ClusterAffinity,
    ClusterInfo,
    LabelRequirement,
    LabelSelector,
)

__all__ = [
    "clear_caches",
    "cluster_matches",
    "compile_affinity",
    "label_selector_matches",
    "requirements_match",
    "tolerates",
]


@functools.lru_cache(maxsize=4096)
def _compile(req: LabelRequirement, *, allow_compare: bool) -> Requirement | None:
    """labels.NewRequirement on a core requirement; None when Kubernetes reports an error."""
    return compile_requirement(req.key, req.operator, req.values, allow_compare=allow_compare)


def requirements_match(
    requirements: tuple[LabelRequirement, ...], labels: Mapping[str, str], *, allow_compare: bool
) -> bool:
    """AND of requirements; any invalid requirement makes the whole selector match nothing."""
    compiled = tuple(_compile(req, allow_compare=allow_compare) for req in requirements)
    return _all_valid(compiled) and all(req.matches(labels) for req in compiled)


def label_selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector + Matches; a conversion error means no match."""
    reqs = tuple(LabelRequirement(k, "In", (v,)) for k, v in selector.match_labels)
    reqs += selector.match_expressions
    return requirements_match(reqs, labels, allow_compare=False)


def cluster_matches(cluster: ClusterInfo, affinity: ClusterAffinity) -> bool:
    """Karmada's util.ClusterMatches (pkg/util/selector.go)."""
    return compile_affinity(affinity)(cluster)


def _never(cluster: ClusterInfo) -> bool:
    return False


def _all_valid(compiled: tuple[Requirement | None, ...]) -> TypeGuard[tuple[Requirement, ...]]:
    return all(r is not None for r in compiled)


@functools.lru_cache(maxsize=16384)
def compile_affinity(affinity: ClusterAffinity) -> Callable[[ClusterInfo], bool]:
    """``ClusterMatches`` for one affinity as a predicate; selector validity is checked once here."""
    exclude = frozenset(affinity.exclude)
    names = frozenset(affinity.cluster_names)
    label_reqs: tuple[Requirement, ...] = ()
    if affinity.label_selector is not None:
        sel = affinity.label_selector
        raw = tuple(LabelRequirement(k, "In", (v,)) for k, v in sel.match_labels) + sel.match_expressions
        compiled = tuple(_compile(r, allow_compare=False) for r in raw)
        if not _all_valid(compiled):
            # An invalid selector never matches; exclusion is checked first but the answer is the same.
            return _never
        label_reqs = compiled
    zone_reqs: tuple[LabelRequirement, ...] = ()
    field_reqs: tuple[Requirement, ...] = ()
    if affinity.field_selector is not None:
        exprs = affinity.field_selector.match_expressions
        zone_reqs = tuple(r for r in exprs if r.key == "zone")
        compiled = tuple(_compile(r, allow_compare=True) for r in exprs if r.key != "zone")
        if not _all_valid(compiled):
            return _never
        field_reqs = compiled

    def matches(cluster: ClusterInfo) -> bool:
        if cluster.name in exclude:
            return False
        if label_reqs:
            labels = cluster.labels
            for r in label_reqs:
                if not r.matches(labels):
                    return False
        for z in zone_reqs:
            if not zones_match(z.operator, z.values, cluster.zones):
                return False
        if field_reqs:
            fields: dict[str, str] = {}
            if cluster.provider:
                fields["provider"] = cluster.provider
            if cluster.region:
                fields["region"] = cluster.region
            for r in field_reqs:
                if not r.matches(fields):
                    return False
        if names:
            return cluster.name in names
        return True

    return matches


def clear_caches() -> None:
    """Forget every compiled selector (benchmarks start each round cold)."""
    compile_affinity.cache_clear()
    _compile.cache_clear()
