"""Which policy claims a resource template (Karmada's resource detector). Pure.

* implicit priority of a policy for a template: the best of its selectors (name 3 > label 2 > kind 1);
* among one kind of policy: highest ``.spec.priority``, then highest implicit priority, then the
  byte-wise smallest name;
* a PropagationPolicy in the template's namespace always wins over a ClusterPropagationPolicy;
* a template that already carries a claim keeps it (claims are sticky) unless preemption applies.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fleetsched.api.load import ResourceTemplate
from fleetsched.api.policy import ClusterPropagationPolicy, PropagationPolicy
from fleetsched.api.selectors import PRIORITY_MISMATCH, selector_priority
from fleetsched.detector import constants
from fleetsched.detector.index import PolicyIndex, PolicySet

__all__ = [
    "Claim",
    "Policy",
    "PolicyMatch",
    "best_policy",
    "choose_policy",
    "claim_of",
    "implicit_priority",
    "is_deleting",
    "preempting_policy",
    "skip_reason",
]

Policy = PropagationPolicy | ClusterPropagationPolicy


@dataclass(frozen=True, slots=True)
class PolicyMatch:
    policy: Policy
    implicit_priority: int


@dataclass(frozen=True, slots=True)
class Claim:
    """The claim metadata a template carries: which policy kind and name (namespace for PPs)."""

    kind: str
    name: str
    namespace: str | None
    permanent_id: str

    def describe(self) -> str:
        if self.kind == PropagationPolicy.KIND:
            return f"PropagationPolicy {self.namespace}/{self.name}"
        return f"ClusterPropagationPolicy {self.name}"


def is_deleting(policy: Policy) -> bool:
    return policy.metadata.deletion_timestamp is not None


def implicit_priority(policy: Policy, template: ResourceTemplate) -> int:
    """The selector priority: the maximum over the policy's selectors; 0 means no match."""
    best = PRIORITY_MISMATCH
    for selector in policy.spec.resource_selectors:
        best = max(
            best,
            selector_priority(
                selector,
                api_version=template.api_version,
                kind=template.kind,
                namespace=template.namespace if template.namespaced else None,
                name=template.name,
                labels=template.labels,
            ),
        )
    return best


def _rank(match: PolicyMatch) -> tuple[int, int, bytes]:
    # Highest explicit priority, then highest implicit priority, then smallest name (byte-wise).
    name = (match.policy.metadata.name or "").encode()
    return (-(match.policy.spec.priority or 0), -match.implicit_priority, name)


def best_policy(policies: Sequence[Policy], template: ResourceTemplate) -> PolicyMatch | None:
    """The winner among policies of one kind (explicit priority, then the selectors' implicit priority,
    then name order); deleting policies never compete."""
    matches = []
    for policy in policies:
        if is_deleting(policy):
            continue
        priority = implicit_priority(policy, template)
        if priority > PRIORITY_MISMATCH:
            matches.append(PolicyMatch(policy, priority))
    if not matches:
        return None
    return min(matches, key=_rank)


def _candidates(index: PolicyIndex[Any] | None, template: ResourceTemplate) -> list[Any]:
    if index is None:
        return []
    return index.candidates(
        api_version=template.api_version, kind=template.kind, name=template.name, labels=template.labels
    )


def choose_policy(
    template: ResourceTemplate,
    propagation_policies: Sequence[PropagationPolicy],
    cluster_propagation_policies: Sequence[ClusterPropagationPolicy],
    *,
    index: PolicySet | None = None,
) -> PolicyMatch | None:
    """First claim: the best PropagationPolicy of the template's namespace, else the best CPP.

    With ``index`` (built from the same policies) only the policies whose selectors may match
    are evaluated; the answer is the same.
    """
    if template.namespaced:
        namespace = template.namespace or ""
        if index is not None:
            local = _candidates(index.namespace_index(namespace), template)
        else:
            local = [p for p in propagation_policies if (p.metadata.namespace or "") == namespace]
        found = best_policy(local, template)
        if found is not None:
            return found
    if index is not None:
        return best_policy(_candidates(index.cpp_index, template), template)
    return best_policy(cluster_propagation_policies, template)


def claim_of(template: ResourceTemplate) -> Claim | None:
    """The claim recorded on the template (its claim labels), PropagationPolicy first."""
    labels, annotations = template.labels, template.annotations
    pp_id = labels.get(constants.PP_PERMANENT_ID_LABEL, "")
    pp_namespace = annotations.get(constants.PP_NAMESPACE_ANNOTATION, "")
    pp_name = annotations.get(constants.PP_NAME_ANNOTATION, "")
    if pp_id and pp_namespace and pp_name:
        return Claim(PropagationPolicy.KIND, pp_name, pp_namespace, pp_id)
    cpp_id = labels.get(constants.CPP_PERMANENT_ID_LABEL, "")
    cpp_name = annotations.get(constants.CPP_NAME_ANNOTATION, "")
    if cpp_id and cpp_name:
        return Claim(ClusterPropagationPolicy.KIND, cpp_name, None, cpp_id)
    return None


def skip_reason(
    template: ResourceTemplate,
    *,
    skipped_namespace_patterns: Sequence[str] = constants.DEFAULT_SKIPPED_NAMESPACE_PATTERNS,
) -> str | None:
    """Why the detector ignores this object altogether (skipped namespaces and API groups), or None."""
    group = template.api_version.rpartition("/")[0]
    if group in constants.SKIPPED_API_GROUPS or (template.api_version, template.kind) == ("v1", "Event"):
        return f"{template.api_version} {template.kind} is never propagated"
    namespace = template.namespace if template.namespaced else None
    if namespace:
        if namespace in constants.RESERVED_NAMESPACES or namespace.startswith(
            constants.RESERVED_NAMESPACE_PREFIX
        ):
            return f"namespace {namespace} is reserved by Karmada"
        for pattern in skipped_namespace_patterns:
            if re.fullmatch(pattern, namespace):
                return f"namespace {namespace} matches skipped-propagating-namespaces {pattern!r}"
        if (namespace, template.kind, template.name) == constants.SKIPPED_OBJECT:
            return "this object is never propagated"
    if template.labels.get(constants.CLAIMED_BY_LABEL):
        return (
            f"claimed by {template.labels[constants.CLAIMED_BY_LABEL]} (label {constants.CLAIMED_BY_LABEL})"
        )
    return None


def _named_by(policy: Policy, template: ResourceTemplate) -> bool:
    return implicit_priority(policy, template) == 3 and all(s.name for s in policy.spec.resource_selectors)


def preempting_policy(
    template: ResourceTemplate,
    claim: Claim,
    claimant: Policy | None,
    propagation_policies: Sequence[PropagationPolicy],
    cluster_propagation_policies: Sequence[ClusterPropagationPolicy],
    *,
    index: PolicySet | None = None,
) -> PolicyMatch | None:
    """Policy preemption (gate PolicyPreemption): a ``preemption: Always`` policy naming the template
    takes it from its current claimant. A PP takes from a lower-priority PP or from any CPP; a CPP
    only from a lower-priority CPP."""
    claimant_priority = (claimant.spec.priority or 0) if claimant is not None else 0
    candidates: list[PolicyMatch] = []
    if index is not None:
        propagation_policies = _candidates(index.namespace_index(template.namespace or ""), template)
        cluster_propagation_policies = _candidates(index.cpp_index, template)
    if template.namespaced:
        for pp in propagation_policies:
            if (pp.metadata.namespace or "") != (template.namespace or "") or is_deleting(pp):
                continue
            if pp.spec.preemption != "Always" or not _named_by(pp, template):
                continue
            if claim.kind == PropagationPolicy.KIND:
                if (claim.namespace, claim.name) == (pp.metadata.namespace, pp.metadata.name):
                    continue
                if (pp.spec.priority or 0) <= claimant_priority:
                    continue
            candidates.append(PolicyMatch(pp, 3))
        if candidates:
            return min(candidates, key=_rank)
    if claim.kind != ClusterPropagationPolicy.KIND:
        return None
    for cpp in cluster_propagation_policies:
        if cpp.metadata.name == claim.name or is_deleting(cpp):
            continue
        if cpp.spec.preemption != "Always" or not _named_by(cpp, template):
            continue
        if (cpp.spec.priority or 0) > claimant_priority:
            candidates.append(PolicyMatch(cpp, 3))
    return min(candidates, key=_rank) if candidates else None
