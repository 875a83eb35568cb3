"""Label-selector and cluster-affinity matching, with Kubernetes' semantics. Pure functions.

* ``label_selector_matches``: metav1.LabelSelector against a label map (matchLabels AND
  matchExpressions with In/NotIn/Exists/DoesNotExist). An invalid selector (bad key or value,
  ``In`` without values, ``Exists`` with values, unknown operator) is a conversion error in
  Kubernetes; callers here get ``False`` ("an unparsable selector never matches", as Karmada
  treats it).
* ``cluster_matches``: Karmada's ``util.ClusterMatches``: exclude, labelSelector,
  fieldSelector on provider/region/zone, clusterNames.
* ``selector_priority``: Karmada's implicit priority of a ResourceSelector for one object (the
  detector's ``ResourceMatchSelectorsPriority``).

Compiled selectors are cached by value (a frozen tuple), so a selector shared by thousands of
bindings is parsed once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

from fleetsched.api.cluster import Cluster
from fleetsched.api.meta import LabelSelector
from fleetsched.api.policy import ClusterAffinity, FieldSelector, ResourceSelector
from fleetsched.labels import Requirement, compile_requirement, is_label_value, is_qualified_name, zones_match

__all__ = [
    "PRIORITY_LABEL_SELECTOR",
    "PRIORITY_MATCH_ALL",
    "PRIORITY_MISMATCH",
    "PRIORITY_NAME",
    "Requirement",
    "cluster_matches",
    "compile_label_selector",
    "field_selector_matches",
    "is_valid_label_key",
    "is_valid_label_value",
    "label_selector_matches",
    "requirements_match",
    "selector_priority",
]

# Label syntax and requirement semantics live in fleetsched.labels, shared with the scheduling core
# and the estimator; these names stay for the API's callers.
is_valid_label_key = is_qualified_name
is_valid_label_value = is_label_value


_LabelSelectorKey = tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str, tuple[str, ...]], ...]]


@lru_cache(maxsize=4096)
def _compile(frozen: _LabelSelectorKey) -> tuple[Requirement, ...] | None:
    match_labels, match_expressions = frozen
    requirements: list[Requirement] = []
    for key, value in match_labels:
        parsed = compile_requirement(key, "In", (value,), allow_compare=False)
        if parsed is None:
            return None
        requirements.append(parsed)
    for key, operator, values in match_expressions:
        # metav1.LabelSelectorAsSelector accepts only the four set-based operators.
        parsed = compile_requirement(key, operator, values, allow_compare=False)
        if parsed is None:
            return None
        requirements.append(parsed)
    return tuple(requirements)


def compile_label_selector(selector: LabelSelector) -> tuple[Requirement, ...] | None:
    """The selector's requirements, or None if it is invalid. An empty selector has no requirements
    and matches everything."""
    frozen: _LabelSelectorKey = (
        tuple(sorted((selector.match_labels or {}).items())),
        tuple(
            (expr.key, expr.operator, tuple(expr.values or ())) for expr in selector.match_expressions or ()
        ),
    )
    return _compile(frozen)


def requirements_match(requirements: Sequence[Requirement], labels: Mapping[str, str]) -> bool:
    return all(requirement.matches(labels) for requirement in requirements)


def label_selector_matches(selector: LabelSelector, labels: Mapping[str, str] | None) -> bool:
    """Does ``labels`` satisfy ``selector``? Invalid selectors match nothing."""
    requirements = compile_label_selector(selector)
    if requirements is None:
        return False
    return requirements_match(requirements, labels or {})


def field_selector_matches(field_selector: FieldSelector, cluster: Cluster) -> bool:
    """Karmada's cluster field selector: ``zone`` against the zone list, every other key as a label
    requirement over ``{provider, region}`` (Gt/Lt allowed, as node-selector operators)."""
    spec = cluster.spec
    # Only ``zones``: the deprecated ``zone`` is migrated by the API server, not by the scheduler.
    zones = spec.zones or ()
    fields: dict[str, str] = {}
    if spec.provider:
        fields["provider"] = spec.provider
    if spec.region:
        fields["region"] = spec.region
    for expr in field_selector.match_expressions or ():
        if expr.key == "zone":
            if not zones_match(expr.operator, expr.values or (), zones):
                return False
            continue
        parsed = compile_requirement(
            expr.key, expr.operator, tuple(expr.values or ()), allow_compare=True
        )
        if parsed is None or not parsed.matches(fields):
            return False
    return True


def cluster_matches(cluster: Cluster, affinity: ClusterAffinity) -> bool:
    """Karmada's ClusterMatches: exclude first, then labelSelector, fieldSelector, clusterNames."""
    name = cluster.metadata.name or ""
    if affinity.exclude and name in affinity.exclude:
        return False
    if affinity.label_selector is not None and not label_selector_matches(
        affinity.label_selector, cluster.metadata.labels
    ):
        return False
    if affinity.field_selector is not None and not field_selector_matches(affinity.field_selector, cluster):
        return False
    if affinity.cluster_names:
        return name in affinity.cluster_names
    return True


PRIORITY_MISMATCH = 0
PRIORITY_MATCH_ALL = 1
PRIORITY_LABEL_SELECTOR = 2
PRIORITY_NAME = 3


def selector_priority(
    selector: ResourceSelector,
    *,
    api_version: str,
    kind: str,
    namespace: str | None,
    name: str,
    labels: Mapping[str, str] | None,
) -> int:
    """The selector priority: 3 name match, 2 label-selector match, 1 apiVersion/kind only, 0 mismatch."""
    if selector.api_version != api_version or selector.kind != kind:
        return PRIORITY_MISMATCH
    if selector.namespace and selector.namespace != (namespace or ""):
        return PRIORITY_MISMATCH
    if selector.name:
        return PRIORITY_NAME if selector.name == name else PRIORITY_MISMATCH
    if selector.label_selector is None:
        return PRIORITY_MATCH_ALL
    if label_selector_matches(selector.label_selector, labels):
        return PRIORITY_LABEL_SELECTOR
    return PRIORITY_MISMATCH
