"""Cluster affinity, label-selector and toleration matching on core values (as Karmada's
ClusterAffinity and TaintToleration plugins match).

Owns Karmada's ``ClusterMatches`` on the core's values. The Kubernetes label-requirement rules it
relies on (which requirements are invalid, how each operator matches) and the toleration rule are
``fleetsched.labels``', shared with the API selectors and the estimator's node filter: a
labelSelector compiles without Gt/Lt, a fieldSelector with them. An invalid selector never matches.
Pure functions.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TypeGuard

from fleetsched.labels import Requirement, compile_requirement, parse_int64, tolerates, zones_match
from fleetsched.scheduler.types import (
    ClusterAffinity,
    ClusterInfo,
    LabelRequirement,
    LabelSelector,
)

__all__ = [
    "ClusterIndex",
    "affinity_mask",
    "clear_caches",
    "cluster_index",
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


class ClusterIndex:
    """The clusters of one snapshot by what an affinity reads, as bit masks (bit i: position i):
    per label key its values and presence, the same for the provider and region fields (present
    when not empty), per zone the clusters listing it, and per name its positions. An affinity is
    then matched against every cluster with a few integer operations (``affinity_mask``)."""

    __slots__ = ("all", "fields", "labels", "names", "size", "with_zones", "zones")

    def __init__(self, clusters: Sequence[ClusterInfo]) -> None:
        self.size = len(clusters)
        self.all = (1 << self.size) - 1
        # key -> (presence mask, value -> mask)
        self.labels: dict[str, tuple[int, dict[str, int]]] = {}
        self.fields: dict[str, tuple[int, dict[str, int]]] = {}
        self.zones: dict[str, int] = {}
        self.names: dict[str, int] = {}
        self.with_zones = 0
        labels: dict[str, dict[str, int]] = {}
        fields: dict[str, dict[str, int]] = {"provider": {}, "region": {}}
        for i, c in enumerate(clusters):
            bit = 1 << i
            self.names[c.name] = self.names.get(c.name, 0) | bit
            for k, v in c.labels.items():
                values = labels.setdefault(k, {})
                values[v] = values.get(v, 0) | bit
            if c.provider:
                fields["provider"][c.provider] = fields["provider"].get(c.provider, 0) | bit
            if c.region:
                fields["region"][c.region] = fields["region"].get(c.region, 0) | bit
            if c.zones:
                self.with_zones |= bit
                for z in c.zones:
                    self.zones[z] = self.zones.get(z, 0) | bit
        for source, target in ((labels, self.labels), (fields, self.fields)):
            for k, values in source.items():
                present = 0
                for m in values.values():
                    present |= m
                target[k] = (present, values)

    def names_mask(self, names: Sequence[str]) -> int:
        m = 0
        for n in names:
            m |= self.names.get(n, 0)
        return m


def _requirement_mask(r: Requirement, keyed: dict[str, tuple[int, dict[str, int]]], full: int) -> int:
    """``Requirement.matches`` of every cluster: those whose map (labels or fields) satisfies ``r``."""
    present, values = keyed.get(r.key, (0, {}))
    op = r.operator
    if op in ("In", "NotIn"):
        m = 0
        for v in r.values:
            m |= values.get(v, 0)
        return m if op == "In" else full & ~m
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return full & ~present
    m = 0  # Gt / Lt: present and parsing as an int64
    for v, mask in values.items():
        number = parse_int64(v)
        if number is not None and (number > r.bound if op == "Gt" else number < r.bound):
            m |= mask
    return m


def _zone_mask(z: LabelRequirement, index: ClusterIndex) -> int:
    """``zones_match`` of every cluster."""
    op = z.operator
    if op in ("In", "NotIn"):
        m = 0
        for v in set(z.values):
            m |= index.zones.get(v, 0)
        return m if op == "In" else index.all & ~m
    if op == "Exists":
        return index.with_zones
    if op == "DoesNotExist":
        return index.all & ~index.with_zones
    return 0


def affinity_mask(affinity: ClusterAffinity, index: ClusterIndex) -> int:
    """``cluster_matches(cluster, affinity)`` of every cluster of ``index``, as a bit mask."""
    m = index.all
    if affinity.exclude:
        m &= ~index.names_mask(affinity.exclude)
    if affinity.label_selector is not None:
        sel = affinity.label_selector
        raw = tuple(LabelRequirement(k, "In", (v,)) for k, v in sel.match_labels) + sel.match_expressions
        compiled = tuple(_compile(r, allow_compare=False) for r in raw)
        if not _all_valid(compiled):
            return 0
        for r in compiled:
            m &= _requirement_mask(r, index.labels, index.all)
    if affinity.field_selector is not None:
        exprs = affinity.field_selector.match_expressions
        fields = tuple(_compile(r, allow_compare=True) for r in exprs if r.key != "zone")
        if not _all_valid(fields):
            return 0
        for z in exprs:
            if z.key == "zone":
                m &= _zone_mask(z, index)
        for r in fields:
            m &= _requirement_mask(r, index.fields, index.all)
    if affinity.cluster_names:
        m &= index.names_mask(affinity.cluster_names)
    return m


# Indexes of whole snapshots, found by the snapshot's cluster tuple (kept here, so compared by
# identity): built once per snapshot, when an affinity is first matched against it.
_INDEXES: OrderedDict[int, tuple[tuple[ClusterInfo, ...], ClusterIndex]] = OrderedDict()
_INDEXES_LIMIT = 4
_indexes_lock = threading.Lock()


def cluster_index(snapshot: tuple[ClusterInfo, ...]) -> ClusterIndex:
    """The ``ClusterIndex`` of a snapshot's clusters (built once per snapshot)."""
    key = id(snapshot)
    with _indexes_lock:
        found = _INDEXES.get(key)
        if found is not None and found[0] is snapshot:
            _INDEXES.move_to_end(key)
            return found[1]
    index = ClusterIndex(snapshot)
    with _indexes_lock:
        _INDEXES[key] = (snapshot, index)
        while len(_INDEXES) > _INDEXES_LIMIT:
            _INDEXES.popitem(last=False)
    return index


def clear_caches() -> None:
    """Forget every compiled selector (benchmarks start each round cold)."""
    compile_affinity.cache_clear()
    _compile.cache_clear()
    with _indexes_lock:
        _INDEXES.clear()
