"""Cluster affinity, label-selector and toleration matching on core values (scheduler.md §5.3, §5.4).

Owns Karmada's ``ClusterMatches`` and the Kubernetes label-selector semantics it relies on,
including which selectors count as invalid (an invalid selector never matches). Pure functions.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping

from fleetsched.scheduler.types import (
    ClusterAffinity,
    ClusterInfo,
    LabelRequirement,
    LabelSelector,
    Taint,
    Toleration,
)

__all__ = ["cluster_matches", "compile_affinity", "label_selector_matches", "requirements_match", "tolerates"]

_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_INT64_RE = re.compile(r"^[+-]?[0-9]+$")


def _is_qualified_name(key: str) -> bool:
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.match(prefix):
            return False
    else:
        return False
    return 0 < len(name) <= 63 and bool(_NAME_RE.match(name))


def _is_label_value(value: str) -> bool:
    return value == "" or (len(value) <= 63 and bool(_NAME_RE.match(value)))


def _parse_int64(text: str) -> int | None:
    if not _INT64_RE.match(text):
        return None
    n = int(text)
    return n if -(2**63) <= n < 2**63 else None


@functools.lru_cache(maxsize=4096)
def _requirement_valid(req: LabelRequirement, *, allow_compare: bool) -> bool:
    """labels.NewRequirement's checks: key syntax, value count per operator, value syntax."""
    if not _is_qualified_name(req.key):
        return False
    op = req.operator
    if op in ("In", "NotIn"):
        if not req.values:
            return False
    elif op in ("Exists", "DoesNotExist"):
        if req.values:
            return False
    elif op in ("Gt", "Lt") and allow_compare:
        if len(req.values) != 1 or _parse_int64(req.values[0]) is None:
            return False
    else:
        return False
    return all(_is_label_value(v) for v in req.values)


def _requirement_matches(req: LabelRequirement, labels: Mapping[str, str]) -> bool:
    op = req.operator
    if op == "In":
        return req.key in labels and labels[req.key] in req.values
    if op == "NotIn":
        return req.key not in labels or labels[req.key] not in req.values
    if op == "Exists":
        return req.key in labels
    if op == "DoesNotExist":
        return req.key not in labels
    # Gt / Lt
    if req.key not in labels:
        return False
    have = _parse_int64(labels[req.key])
    want = _parse_int64(req.values[0])
    if have is None or want is None:
        return False
    return have > want if op == "Gt" else have < want


def requirements_match(
    requirements: tuple[LabelRequirement, ...], labels: Mapping[str, str], *, allow_compare: bool
) -> bool:
    """AND of requirements; any invalid requirement makes the whole selector match nothing."""
    for req in requirements:
        if not _requirement_valid(req, allow_compare=allow_compare):
            return False
    return all(_requirement_matches(req, labels) for req in requirements)


def label_selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector + Matches; a conversion error means no match."""
    reqs = tuple(LabelRequirement(k, "In", (v,)) for k, v in selector.match_labels)
    reqs += selector.match_expressions
    return requirements_match(reqs, labels, allow_compare=False)


def _zone_matches(req: LabelRequirement, zones: tuple[str, ...]) -> bool:
    op = req.operator
    if op == "In":
        return bool(zones) and any(z in req.values for z in zones)
    if op == "NotIn":
        return not any(z in req.values for z in zones)
    if op == "Exists":
        return bool(zones)
    if op == "DoesNotExist":
        return not zones
    return False


def cluster_matches(cluster: ClusterInfo, affinity: ClusterAffinity) -> bool:
    """Karmada's util.ClusterMatches (pkg/util/selector.go)."""
    return compile_affinity(affinity)(cluster)


def _never(cluster: ClusterInfo) -> bool:
    return False


@functools.lru_cache(maxsize=16384)
def compile_affinity(affinity: ClusterAffinity) -> Callable[[ClusterInfo], bool]:
    """``ClusterMatches`` for one affinity as a predicate; selector validity is checked once here."""
    exclude = frozenset(affinity.exclude)
    names = frozenset(affinity.cluster_names)
    label_reqs: tuple[LabelRequirement, ...] | None = None
    if affinity.label_selector is not None:
        sel = affinity.label_selector
        label_reqs = (
            tuple(LabelRequirement(k, "In", (v,)) for k, v in sel.match_labels) + sel.match_expressions
        )
        if not all(_requirement_valid(r, allow_compare=False) for r in label_reqs):
            # An invalid selector never matches; exclusion is checked first but the answer is the same.
            return _never
    zone_reqs: tuple[LabelRequirement, ...] = ()
    field_reqs: tuple[LabelRequirement, ...] = ()
    if affinity.field_selector is not None:
        exprs = affinity.field_selector.match_expressions
        zone_reqs = tuple(r for r in exprs if r.key == "zone")
        field_reqs = tuple(r for r in exprs if r.key != "zone")
        if field_reqs and not all(_requirement_valid(r, allow_compare=True) for r in field_reqs):
            return _never

    def matches(cluster: ClusterInfo) -> bool:
        if cluster.name in exclude:
            return False
        if label_reqs:
            labels = cluster.labels
            for r in label_reqs:
                if not _requirement_matches(r, labels):
                    return False
        for r in zone_reqs:
            if not _zone_matches(r, cluster.zones):
                return False
        if field_reqs:
            fields: dict[str, str] = {}
            if cluster.provider:
                fields["provider"] = cluster.provider
            if cluster.region:
                fields["region"] = cluster.region
            for r in field_reqs:
                if not _requirement_matches(r, fields):
                    return False
        if names:
            return cluster.name in names
        return True

    return matches


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Toleration.ToleratesTaint with comparison operators disabled (§5.4)."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"
