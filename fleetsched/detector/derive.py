"""Deriving bindings from resource templates and policies, one template at a time (Karmada's
resource detector, pkg/detector).

``derive`` is the whole decision for a set of templates: which policy claims each one (sticky
claims from template metadata, first claim by priority, preemption when the gate is on), and the
binding built from it, or the reason there is none. ``derive_bindings`` is the short form used by
``fleetsched simulate``; ``admit_offline`` gives policies read from files what the API server and
Karmada's mutating webhook would have given them. Pure: no clock, no randomness, no I/O.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetsched.api.load import LoadError, LoadResult, ResourceTemplate, Source
from fleetsched.api.policy import ClusterPropagationPolicy, PropagationPolicy
from fleetsched.detector import constants
from fleetsched.detector.build import Binding, BuildError, FeatureGates, build_binding, build_binding_fields
from fleetsched.detector.index import PolicySet
from fleetsched.detector.interpret import InterpretError
from fleetsched.detector.match import (
    Claim,
    Policy,
    PolicyMatch,
    choose_policy,
    claim_of,
    implicit_priority,
    is_deleting,
    preempting_policy,
    skip_reason,
)

__all__ = [
    "AdmissionError",
    "Derivation",
    "TemplateResult",
    "admit_offline",
    "derive",
    "derive_bindings",
    "offline_permanent_id",
    "priority_class_values",
]


@dataclass(frozen=True, slots=True)
class TemplateResult:
    """What happened to one template: the claiming policy and binding, or why there is none."""

    template: ResourceTemplate
    policy: Policy | None = None
    binding: Binding | None = None
    reason: str = ""
    implicit_priority: int = 0
    # The binding in its JSON form instead of ``binding``, from ``derive(..., as_fields=True)``.
    fields: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Derivation:
    results: tuple[TemplateResult, ...] = field(default_factory=tuple)

    @property
    def bindings(self) -> list[Binding]:
        return [r.binding for r in self.results if r.binding is not None]

    @property
    def binding_fields(self) -> list[dict[str, Any]]:
        """The bindings in their JSON form (``derive(..., as_fields=True)``)."""
        return [r.fields for r in self.results if r.fields is not None]

    @property
    def unmatched(self) -> list[TemplateResult]:
        return [r for r in self.results if r.binding is None and r.fields is None]


def _policy_key(policy: Policy) -> str:
    if isinstance(policy, PropagationPolicy):
        return f"PropagationPolicy {policy.metadata.namespace}/{policy.metadata.name}"
    return f"ClusterPropagationPolicy {policy.metadata.name}"


def _find_claimant(claim: Claim, policies: PolicySet) -> Policy | None:
    if claim.kind == PropagationPolicy.KIND:
        return policies.propagation_policy(claim.namespace or "", claim.name)
    return policies.cpp_by_name.get(claim.name)


def _missing_overrides(
    policy: Policy, override_exists: Callable[[str | None, str], bool] | None
) -> list[str]:
    if override_exists is None:
        return []
    namespace = policy.metadata.namespace if isinstance(policy, PropagationPolicy) else None
    return [name for name in policy.spec.dependent_overrides or () if not override_exists(namespace, name)]


def _resolve(
    template: ResourceTemplate,
    policies: PolicySet,
    gates: FeatureGates,
    skipped_namespace_patterns: Sequence[str],
) -> PolicyMatch | str:
    """The policy to apply to the template (§7.2 steps 2-7), or the reason none applies."""
    skipped = skip_reason(template, skipped_namespace_patterns=skipped_namespace_patterns)
    if skipped is not None:
        return f"skipped: {skipped}"
    claim = claim_of(template)
    if claim is not None:
        claimant = _find_claimant(claim, policies)
        if gates.policy_preemption:
            preemptor = preempting_policy(
                template,
                claim,
                claimant,
                policies.propagation_policies,
                policies.cluster_propagation_policies,
                index=policies,
            )
            if preemptor is not None:
                return preemptor
        if claimant is not None:
            if is_deleting(claimant):
                return f"claimed by {claim.describe()}, which is being deleted; waiting"
            priority = implicit_priority(claimant, template)
            if priority == 0:
                return f"claimed by {claim.describe()}, whose resource selectors no longer match"
            return PolicyMatch(claimant, priority)
        # The claiming policy is gone: Karmada removes the stale claim and matches afresh.
    match = choose_policy(
        template, policies.propagation_policies, policies.cluster_propagation_policies, index=policies
    )
    if match is None:
        where = "" if not template.namespaced else f" in namespace {template.namespace} or"
        return f"no PropagationPolicy{where} ClusterPropagationPolicy matches"
    return match


def derive(
    templates: Sequence[ResourceTemplate],
    propagation_policies: Sequence[PropagationPolicy],
    cluster_propagation_policies: Sequence[ClusterPropagationPolicy],
    *,
    gates: FeatureGates | None = None,
    priority_class_value: Callable[[str], int | None] | None = None,
    override_exists: Callable[[str | None, str], bool] | None = None,
    skipped_namespace_patterns: Sequence[str] = constants.DEFAULT_SKIPPED_NAMESPACE_PATTERNS,
    index: PolicySet | None = None,
    as_fields: bool = False,
) -> Derivation:
    """Bindings for every template, in template order, with a reason for each template left out.

    ``index``, built from the same policies, lets a caller that derives often (the policy
    controller, one template per event) index them once; without it they are indexed here. What
    a policy puts into each of its bindings is computed once per index (``PolicySet.built_parts``).
    ``as_fields``: each binding in its JSON form (``TemplateResult.fields``, what
    ``build_binding(...).to_dict()`` gives) instead of a model, for callers that only serialise it.

    ``override_exists(namespace, name)`` checks ``dependentOverrides``; None skips the check
    (offline, where overrides do not exist and do not change scheduling).
    """
    gates = gates or FeatureGates()
    # Indexed once, so each template evaluates only the policies that may select it (linear in
    # templates x matching policies, not templates x policies).
    policies = index if index is not None else PolicySet(propagation_policies, cluster_propagation_policies)
    results: list[TemplateResult] = []
    for template in templates:
        resolved = _resolve(template, policies, gates, skipped_namespace_patterns)
        if isinstance(resolved, str):
            results.append(TemplateResult(template, reason=resolved))
            continue
        policy = resolved.policy
        missing = _missing_overrides(policy, override_exists)
        if missing:
            reason = f"waiting for dependent overrides of {_policy_key(policy)}: {', '.join(missing)}"
            results.append(TemplateResult(template, policy, reason=reason))
            continue
        try:
            if as_fields:
                fields = build_binding_fields(
                    template,
                    policy,
                    gates=gates,
                    priority_class_value=priority_class_value,
                    parts=policies.built_parts,
                )
                binding = None
            else:
                binding = build_binding(
                    template,
                    policy,
                    gates=gates,
                    priority_class_value=priority_class_value,
                    parts=policies.built_parts,
                )
                fields = None
        except (BuildError, InterpretError) as exc:
            reason = f"applying {_policy_key(policy)} failed: {exc}"
            results.append(
                TemplateResult(template, policy, reason=reason, implicit_priority=resolved.implicit_priority)
            )
            continue
        results.append(
            TemplateResult(
                template, policy, binding, implicit_priority=resolved.implicit_priority, fields=fields
            )
        )
    return Derivation(tuple(results))


# --- offline admission ----------------------------------------------------------------------


class AdmissionError(LoadError):
    """A policy from a file that Karmada's webhook would deny; the message is the webhook's.
    A ``LoadError``, so ``fleetsched simulate`` reports it as bad input (exit 2)."""


def offline_permanent_id(policy: Policy) -> str:
    """A stable stand-in for the webhook's random UUID, so the same files give the same bindings."""
    key = f"{policy.kind}/{policy.metadata.namespace or ''}/{policy.metadata.name or ''}"
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "fleetsched:" + key))


def admit_offline(policy: Policy, *, source: Source | None = None) -> Policy:
    """The policy as stored after the API server (CRD defaults) and Karmada's mutating and
    validating webhooks (``fleetsched.webhook.rules``). Raises ``AdmissionError`` with the webhook's
    message."""
    from fleetsched.api.defaults import apply_crd_defaults
    from fleetsched.webhook import rules

    kind = (
        rules.PROPAGATION_POLICY
        if isinstance(policy, PropagationPolicy)
        else rules.CLUSTER_PROPAGATION_POLICY
    )
    namespace = policy.metadata.namespace or "" if isinstance(policy, PropagationPolicy) else ""
    raw: dict[str, Any] = apply_crd_defaults(policy.to_dict())
    label = (
        constants.PP_PERMANENT_ID_LABEL
        if isinstance(policy, PropagationPolicy)
        else constants.CPP_PERMANENT_ID_LABEL
    )
    existing = (policy.metadata.labels or {}).get(label) or offline_permanent_id(policy)
    mutated = rules.mutate_policy(
        kind, operation="CREATE", obj=raw, request_namespace=namespace, permanent_id=existing
    )
    denial = rules.validate_policy(
        kind, operation="CREATE", obj=mutated, old=None, request_namespace=namespace
    )
    if denial is not None:
        raise AdmissionError(f"{_policy_key(policy)} would be denied by the webhook: {denial}", source=source)
    return type(policy).model_validate(mutated)


def priority_class_values(templates: Collection[ResourceTemplate]) -> Callable[[str], int | None]:
    """PriorityClass values by name, from the PriorityClass objects among ``templates``
    (offline: the input files hold them)."""
    values: dict[str, int] = {}
    for template in templates:
        if (template.api_version, template.kind) == ("scheduling.k8s.io/v1", "PriorityClass"):
            value = template.raw.get("value")
            if isinstance(value, int) and not isinstance(value, bool):
                values[template.name] = value
    return values.get


def derive_bindings(
    templates: Sequence[ResourceTemplate] | LoadResult,
    policies: Sequence[Policy] | None = None,
    *,
    gates: FeatureGates | None = None,
    admit: bool | None = None,
) -> list[Binding]:
    """The bindings Karmada's detector would create for these templates and policies.

    Given a ``LoadResult`` (files read by ``fleetsched simulate``), templates, policies and
    PriorityClasses come from it and policies are admitted offline first (``admit`` defaults to
    True then, False otherwise).
    """
    loaded: LoadResult | None = None
    if isinstance(templates, LoadResult):
        loaded = templates
        template_list = loaded.templates
        policy_list = list(loaded.policies) if policies is None else list(policies)
        admit = True if admit is None else admit
    else:
        template_list = list(templates)
        policy_list = list(policies or [])
        admit = bool(admit)
    if admit:
        policy_list = [admit_offline(p, source=loaded.source_of(p) if loaded else None) for p in policy_list]
    derivation = derive(
        template_list,
        [p for p in policy_list if isinstance(p, PropagationPolicy)],
        [p for p in policy_list if isinstance(p, ClusterPropagationPolicy)],
        gates=gates,
        priority_class_value=priority_class_values(template_list),
    )
    return derivation.bindings
