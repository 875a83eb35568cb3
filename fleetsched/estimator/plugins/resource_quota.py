"""ResourceQuotaEstimator: replicas and sets the namespace's ResourceQuotas still allow
(karmada-scheduler-estimator's ResourceQuotaEstimator). Only active with the
``ResourceQuotaEstimate`` gate.

Karmada quirks kept on purpose: quota scope selectors are ORed and only ``PriorityClass`` can match;
an empty request namespace consults every namespace's quotas; free = hard - used may be negative (its
integer view rounds away from zero, as Go's does) and the division then truncates toward zero (Go), so
``-1300m / 500m`` gives -2, not Python's -3.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleetsched.api.quantity import Quantity
from fleetsched.api.resources import CPU, MEMORY, as_quantity, is_extended_resource
from fleetsched.estimator.framework import Code, EstimateContext, PluginResult
from fleetsched.estimator.model import MAX_INT32, Component, NodeSelectorRequirement, ReplicaRequirements
from fleetsched.estimator.nodefilter import compile_requirement

__all__ = ["NAME", "Quota", "QuotaSelector", "QuotaStore", "ResourceQuotaEstimator", "quota_from_object"]

NAME = "ResourceQuotaEstimator"
_REQUESTS = "requests."
_PRIORITY_CLASS = "PriorityClass"
_SCOPE_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@dataclass(frozen=True, slots=True)
class QuotaSelector:
    scope: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, priority_class: str) -> bool:
        if self.scope != _PRIORITY_CLASS:
            return False
        if self.operator == "Exists":
            return priority_class != ""
        if self.operator not in _SCOPE_OPERATORS:
            return False
        # A label requirement on the one-label set {PriorityClass: P}; an invalid one (values where none are
        # allowed, none where some are needed, an invalid label value) never matches.
        raw = NodeSelectorRequirement(_PRIORITY_CLASS, self.operator, self.values)
        requirement = compile_requirement(raw)
        if requirement is None:
            return False
        return requirement.matches({_PRIORITY_CLASS: priority_class} if priority_class else {})


@dataclass(frozen=True, slots=True)
class Quota:
    namespace: str
    name: str
    selectors: tuple[QuotaSelector, ...]
    hard: Mapping[str, Quantity]
    used: Mapping[str, Quantity]

    def applies_to(self, priority_class: str) -> bool:
        return not self.selectors or any(s.matches(priority_class) for s in self.selectors)


def quota_from_object(obj: Mapping[str, Any]) -> Quota:
    """A ResourceQuota object (Kubernetes JSON form) as the plugin needs it."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    selectors = [QuotaSelector(str(scope), "Exists") for scope in spec.get("scopes") or ()]
    for expression in (spec.get("scopeSelector") or {}).get("matchExpressions") or ():
        selectors.append(QuotaSelector(str(expression.get("scopeName", "")),
                                       str(expression.get("operator", "")),
                                       tuple(str(v) for v in expression.get("values") or ())))
    return Quota(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        selectors=tuple(selectors),
        hard={k: as_quantity(v) for k, v in (status.get("hard") or {}).items()},
        used={k: as_quantity(v) for k, v in (status.get("used") or {}).items()},
    )


class QuotaStore:
    """ResourceQuotas by namespace; written by the watch (or the offline loader), read per request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, str], Quota] = {}

    def upsert(self, quota: Quota) -> None:
        with self._lock:
            self._by_key[(quota.namespace, quota.name)] = quota

    def delete(self, namespace: str, name: str) -> None:
        with self._lock:
            self._by_key.pop((namespace, name), None)

    def list(self, namespace: str) -> list[Quota]:
        """Quotas of ``namespace``; the empty namespace lists every namespace's (as Karmada's lister does)."""
        with self._lock:
            quotas = list(self._by_key.items())
        quotas.sort(key=lambda item: item[0])
        return [q for (ns, _), q in quotas if not namespace or ns == namespace]


def _integer(name: str, q: Quantity) -> int:
    # Millicores for CPU, units otherwise; Quantity's views round away from zero as Go's do, which matters
    # for a negative free amount (used > hard).
    return q.milli_value() if name == CPU else q.value()


def _trunc_div(a: int, b: int) -> int:
    return a // b if a >= 0 else -((-a) // b)


def _quota_resource(name: str) -> bool:
    return name in (CPU, MEMORY) or is_extended_resource(name)


def free_of(quota: Quota) -> dict[str, int]:
    """hard - used per resource the quota constrains (``requests.`` names win over bare ones)."""
    bare: dict[str, int] = {}
    prefixed: dict[str, int] = {}
    for name, hard in quota.hard.items():
        if name.startswith("limits."):
            continue
        target, base = (prefixed, name[len(_REQUESTS):]) if name.startswith(_REQUESTS) else (bare, name)
        if not _quota_resource(base):
            continue
        used = quota.used.get(name)
        if used is None:
            continue
        target[base] = _integer(base, hard - used)
    return {**bare, **prefixed}


def _request_vector(request: Iterable[tuple[str, Quantity]], replicas: int = 1) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, q in request:
        if _quota_resource(name):
            out[name] = out.get(name, 0) + replicas * _integer(name, q)
    return out


def _divide(free: Mapping[str, int], demand: Mapping[str, int]) -> int | None:
    """min(free // demand) over demanded names the quota tracks; None when nothing constrains."""
    allowed: int | None = None
    for name, amount in demand.items():
        if name not in free or amount <= 0:
            continue
        share = _trunc_div(free[name], amount)
        allowed = share if allowed is None else min(allowed, share)
    if allowed is None or allowed > MAX_INT32:
        return None
    # Go converts the 64-bit result with int32(): a quota over-used by more than 2^31 requests wraps
    return (allowed + 2**31) % 2**32 - 2**31


class ResourceQuotaEstimator:
    name = NAME

    def __init__(self, store: QuotaStore, *, enabled: bool) -> None:
        self._store = store
        self._enabled = enabled

    def _deduct(self, ctx: EstimateContext, quota: Quota, namespace: str,
                free: dict[str, int]) -> dict[str, int] | None:
        """Free after the assumed workloads of this namespace the quota covers; None if it went negative."""
        if not ctx.assumed_workloads:
            return free
        taken: dict[str, int] = {}
        for workload in ctx.assumed_workloads:
            if workload.namespace != namespace:
                continue
            for component in workload.components:
                requirements = component.requirements
                if requirements is None or not quota.applies_to(requirements.priority_class_name):
                    continue
                vector = _request_vector(requirements.resource_request, component.replicas)
                for name, amount in vector.items():
                    taken[name] = taken.get(name, 0) + amount
        # Only the subtraction results are checked: a resource already over-used that no assumption touches
        # keeps its negative free amount (and Go's truncated negative division).
        left = dict(free)
        for name, amount in taken.items():
            if name in left:
                left[name] -= amount
                if left[name] < 0:
                    return None
        return left

    def estimate_replicas(self, ctx: EstimateContext,
                          requirements: ReplicaRequirements | None) -> PluginResult:
        if not self._enabled:
            return PluginResult.no_operation()
        if requirements is None:
            return PluginResult.success(MAX_INT32)
        result = MAX_INT32
        demand = _request_vector(requirements.resource_request)
        for quota in self._store.list(requirements.namespace):
            if not quota.applies_to(requirements.priority_class_name):
                continue
            free = free_of(quota)
            if not free:
                continue  # the quota tracks none of the resources this plugin knows
            # Deduct first: assumptions pushing the quota below zero make it yield 0 whatever the request
            # names; only then does a request of resources the quota does not track go unconstrained.
            left = self._deduct(ctx, quota, requirements.namespace, free)
            if left is None:
                result = min(result, 0)
                continue
            allowed = _divide(left, demand)
            if allowed is not None:
                result = min(result, allowed)
        if result == 0:
            return PluginResult(0, Code.UNSCHEDULABLE)
        return PluginResult.success(result)

    def estimate_components(self, ctx: EstimateContext, components: Sequence[Component],
                            namespace: str) -> PluginResult:
        if not self._enabled:
            return PluginResult.no_operation()
        if not components or not namespace:
            return PluginResult.success(MAX_INT32)
        quotas = self._store.list(namespace)
        result = MAX_INT32
        for quota in quotas:
            if quota.selectors:
                matched = [c for c in components if c.requirements is not None
                           and quota.applies_to(c.requirements.priority_class_name)]
            else:
                matched = list(components)
            if not matched:
                continue
            free = free_of(quota)
            if not free:
                continue
            left = self._deduct(ctx, quota, namespace, free)
            if left is None:
                result = 0
                break
            per_set: dict[str, int] = {}
            for component in matched:
                if component.requirements is None:
                    continue
                vector = _request_vector(component.requirements.resource_request, component.replicas)
                for name, amount in vector.items():
                    per_set[name] = per_set.get(name, 0) + amount
            allowed = _divide(left, per_set)
            if allowed is not None:
                result = min(result, allowed)
            if result == 0:
                break
        if result == 0:
            return PluginResult(0, Code.UNSCHEDULABLE)
        return PluginResult.success(result)
