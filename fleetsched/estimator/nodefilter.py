"""Which nodes a node claim admits (node affinity, node selector and
taints, as karmada-scheduler-estimator filters nodes).

A node passes when its labels satisfy the ``nodeSelector`` map, one non-empty term of the required
node affinity matches (expressions against labels, fields against ``{metadata.name: <node>}``), and every
``NoSchedule``/``NoExecute`` taint - plus the implicit unschedulable taint of a cordoned node - is
tolerated. Requirement validity follows Kubernetes' label-selector rules: a term with any invalid
requirement never matches, but the other terms are still evaluated.

``node_matches`` is the per-node reference; :class:`fleetsched.estimator.cache.NodeTable` computes the
same answer for all nodes at once from indexes, reusing :func:`compile_requirement`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fleetsched import labels as label_rules
from fleetsched.estimator.model import NodeClaim, NodeSelectorRequirement, NodeSelectorTerm, Toleration
from fleetsched.labels import Requirement, parse_int64, tolerates

__all__ = [
    "UNSCHEDULABLE_TAINT",
    "CompiledRequirement",
    "Taint",
    "compile_field_requirement",
    "compile_requirement",
    "compile_terms",
    "node_matches",
    "parse_int64",
    "tolerates",
    "tolerates_all",
]

_FILTERED_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


# Label requirements follow Kubernetes' rules, shared with the scheduler in fleetsched.labels; unlike a
# labelSelector, a node-selector term accepts Gt/Lt (Kubernetes' node affinity).
CompiledRequirement = Requirement


def compile_requirement(requirement: NodeSelectorRequirement) -> CompiledRequirement | None:
    """A label requirement as Kubernetes' labels.NewRequirement accepts it, or None when it is invalid."""
    return label_rules.compile_requirement(
        requirement.key, requirement.operator, requirement.values, allow_compare=True
    )


def compile_field_requirement(requirement: NodeSelectorRequirement) -> CompiledRequirement | None:
    """A field requirement: only In/NotIn with exactly one value; the key is not validated."""
    if requirement.operator not in ("In", "NotIn") or len(requirement.values) != 1:
        return None
    return CompiledRequirement(requirement.key, requirement.operator, frozenset(requirement.values))


CompiledTerm = tuple[tuple[CompiledRequirement, ...], tuple[CompiledRequirement, ...]]


def compile_terms(terms: Sequence[NodeSelectorTerm]) -> list[CompiledTerm | None]:
    """Non-empty terms, each compiled (None for a term holding an invalid requirement)."""
    out: list[CompiledTerm | None] = []
    for term in terms:
        if not term.match_expressions and not term.match_fields:
            continue
        expressions = [compile_requirement(r) for r in term.match_expressions]
        fields = [compile_field_requirement(r) for r in term.match_fields]
        if any(r is None for r in expressions) or any(r is None for r in fields):
            out.append(None)
            continue
        out.append((tuple(r for r in expressions if r is not None),
                    tuple(r for r in fields if r is not None)))
    return out


def field_matches(requirement: CompiledRequirement, node_name: str) -> bool:
    # The field set is {metadata.name: <name>}; any other key reads as the empty string.
    actual = node_name if requirement.key == "metadata.name" else ""
    (wanted,) = requirement.values
    return actual == wanted if requirement.operator == "In" else actual != wanted


def tolerates_all(tolerations: Sequence[Toleration], taints: Sequence[Taint], unschedulable: bool) -> bool:
    if unschedulable and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in tolerations):
        return False
    for taint in taints:
        if taint.effect in _FILTERED_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
            return False
    return True


def node_matches(*, name: str, labels: Mapping[str, str], taints: Sequence[Taint], unschedulable: bool,
                 claim: NodeClaim) -> bool:
    """The reference check of one node against a node claim."""
    for key, value in claim.node_selector:
        if labels.get(key) != value or key not in labels:
            return False
    if claim.node_affinity is not None:
        matched = False
        for term in compile_terms(claim.node_affinity):
            if term is None:
                continue
            expressions, fields = term
            if all(r.matches(labels) for r in expressions) and all(field_matches(f, name) for f in fields):
                matched = True
                break
        if not matched:
            return False
    return tolerates_all(claim.tolerations, taints, unschedulable)
