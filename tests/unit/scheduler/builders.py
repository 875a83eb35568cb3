"""Small builders for core values: ``a_cluster("m1").tainted("k", "NoSchedule").build()``."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any

from fleetsched.api.quantity import parse_quantity
from fleetsched.scheduler.types import (
    AffinityTerm,
    BindingStatus,
    ClusterAffinity,
    ClusterInfo,
    FieldSelector,
    LabelRequirement,
    LabelSelector,
    ObjectReference,
    OverflowTerm,
    Placement,
    ReplicaRequirements,
    ReplicaScheduling,
    ResourceModel,
    ResourceSummary,
    SchedulingBinding,
    SpreadConstraint,
    StaticWeightRule,
    Taint,
    TargetCluster,
    Toleration,
    WeightPreference,
)

DEPLOYMENT = {("apps/v1", "Deployment"), ("v1", "ConfigMap")}


class ClusterBuilder:
    def __init__(self, name: str) -> None:
        self._kw: dict[str, Any] = {"name": name, "api_enablements": frozenset(DEPLOYMENT), "labels": {}}
        self._alloc: dict[str, str] = {"pods": "110"}
        self._allocated: dict[str, str] = {}
        self._modelings: tuple[tuple[int, int], ...] = ()
        self._summary = True

    def labeled(self, **labels: str) -> ClusterBuilder:
        self._kw["labels"] = {**self._kw["labels"], **labels}
        return self

    def tainted(self, key: str, effect: str, value: str = "") -> ClusterBuilder:
        self._kw["taints"] = (*self._kw.get("taints", ()), Taint(key, value, effect))
        return self

    def region(self, region: str) -> ClusterBuilder:
        self._kw["region"] = region
        return self

    def provider(self, provider: str) -> ClusterBuilder:
        self._kw["provider"] = provider
        return self

    def zones(self, *zones: str) -> ClusterBuilder:
        self._kw["zones"] = zones
        return self

    def deleting(self) -> ClusterBuilder:
        self._kw["deleting"] = True
        return self

    def without_api(self) -> ClusterBuilder:
        self._kw["api_enablements"] = frozenset()
        return self

    def free(self, pods: int) -> ClusterBuilder:
        """Pod headroom only (no other resources): the general estimate of a no-request workload."""
        self._alloc["pods"] = str(pods)
        return self

    def allocatable(self, **resources: str) -> ClusterBuilder:
        self._alloc.update({k.replace("_", "-"): v for k, v in resources.items()})
        return self

    def allocated(self, **resources: str) -> ClusterBuilder:
        self._allocated.update({k.replace("_", "-"): v for k, v in resources.items()})
        return self

    def no_summary(self) -> ClusterBuilder:
        self._summary = False
        return self

    def models(self, *grades: tuple[int, dict[str, str]], modelings: dict[int, int]) -> ClusterBuilder:
        self._kw["resource_models"] = tuple(
            ResourceModel(g, tuple((n, parse_quantity(v), parse_quantity(v)) for n, v in ranges.items()))
            for g, ranges in grades
        )
        self._modelings = tuple(modelings.items())
        return self

    def build(self) -> ClusterInfo:
        summary = None
        if self._summary:
            summary = ResourceSummary(
                allocatable={k: parse_quantity(v) for k, v in self._alloc.items()},
                allocated={k: parse_quantity(v) for k, v in self._allocated.items()},
                allocating={},
                allocatable_modelings=self._modelings,
            )
        return ClusterInfo(resource_summary=summary, **self._kw)


def a_cluster(name: str) -> ClusterBuilder:
    return ClusterBuilder(name)


def names(*cluster_names: str) -> ClusterAffinity:
    return ClusterAffinity(cluster_names=cluster_names)


def labels(**match: str) -> ClusterAffinity:
    return ClusterAffinity(label_selector=LabelSelector(tuple(match.items())))


def expression(key: str, op: str, *values: str) -> LabelRequirement:
    return LabelRequirement(key, op, values)


def fields(*exprs: LabelRequirement) -> ClusterAffinity:
    return ClusterAffinity(field_selector=FieldSelector(exprs))


class BindingBuilder:
    def __init__(self, name: str) -> None:
        self._kw: dict[str, Any] = {
            "kind": "ResourceBinding",
            "name": name,
            "namespace": "default",
            "resource": ObjectReference("apps/v1", "Deployment", "default", name, ""),
        }
        self._placement = Placement()
        self._status = BindingStatus()

    def crb(self) -> BindingBuilder:
        self._kw["kind"] = "ClusterResourceBinding"
        self._kw["namespace"] = ""
        return self

    def configmap(self) -> BindingBuilder:
        self._kw["resource"] = replace(self._kw["resource"], api_version="v1", kind="ConfigMap")
        return self

    def uid(self, uid: str) -> BindingBuilder:
        self._kw["resource"] = replace(self._kw["resource"], uid=uid)
        return self

    def replicas(self, n: int) -> BindingBuilder:
        self._kw["replicas"] = n
        return self

    def requests(self, **resources: str) -> BindingBuilder:
        self._kw["replica_requirements"] = ReplicaRequirements(
            tuple((k.replace("_", "-"), parse_quantity(v)) for k, v in resources.items())
        )
        return self

    def targets(self, **replicas: int) -> BindingBuilder:
        self._kw["clusters"] = tuple(TargetCluster(n, r) for n, r in replicas.items())
        return self

    def evicting(self, *clusters: str) -> BindingBuilder:
        self._kw["evicting_clusters"] = clusters
        return self

    def affinity(self, affinity: ClusterAffinity) -> BindingBuilder:
        self._placement = replace(self._placement, cluster_affinity=affinity)
        return self

    def groups(self, *terms: AffinityTerm) -> BindingBuilder:
        self._placement = replace(self._placement, cluster_affinities=terms)
        return self

    def tolerating(
        self, key: str = "", effect: str = "", value: str = "", operator: str = ""
    ) -> BindingBuilder:
        tol = Toleration(key, operator, value, effect)
        self._placement = replace(
            self._placement, cluster_tolerations=(*self._placement.cluster_tolerations, tol)
        )
        return self

    def spread(self, field: str, min_groups: int, max_groups: int) -> BindingBuilder:
        sc = SpreadConstraint(field, "", max_groups, min_groups)
        self._placement = replace(
            self._placement, spread_constraints=(*self._placement.spread_constraints, sc)
        )
        return self

    def duplicated(self) -> BindingBuilder:
        self._placement = replace(self._placement, replica_scheduling=ReplicaScheduling("Duplicated"))
        return self

    def aggregated(self) -> BindingBuilder:
        self._placement = replace(
            self._placement, replica_scheduling=ReplicaScheduling("Divided", "Aggregated")
        )
        return self

    def dynamic(self) -> BindingBuilder:
        rs = ReplicaScheduling("Divided", "Weighted", WeightPreference((), "AvailableReplicas"))
        self._placement = replace(self._placement, replica_scheduling=rs)
        return self

    def static(self, *weights: tuple[str, int]) -> BindingBuilder:
        rules = tuple(StaticWeightRule(names(n), w) for n, w in weights)
        rs = ReplicaScheduling("Divided", "Weighted", WeightPreference(rules, ""))
        self._placement = replace(self._placement, replica_scheduling=rs)
        return self

    def weighted_evenly(self) -> BindingBuilder:
        self._placement = replace(
            self._placement, replica_scheduling=ReplicaScheduling("Divided", "Weighted")
        )
        return self

    def scheduling(self, rs: ReplicaScheduling | None) -> BindingBuilder:
        self._placement = replace(self._placement, replica_scheduling=rs)
        return self

    def no_placement(self) -> BindingBuilder:
        self._placement = None  # type: ignore[assignment]
        return self

    def observing(self, affinity_name: str) -> BindingBuilder:
        self._status = replace(self._status, scheduler_observing_affinity_name=affinity_name)
        return self

    def rescheduled(self, *, triggered: str, last: str) -> BindingBuilder:
        self._kw["reschedule_triggered_at"] = dt.datetime.fromisoformat(triggered)
        self._status = replace(self._status, last_scheduled_time=dt.datetime.fromisoformat(last))
        return self

    def build(self) -> SchedulingBinding:
        return SchedulingBinding(placement=self._placement, **self._kw)

    def status(self) -> BindingStatus:
        return self._status


def a_binding(name: str = "b") -> BindingBuilder:
    return BindingBuilder(name)


def term(name: str, affinity: ClusterAffinity, *overflow: tuple[str, ClusterAffinity]) -> AffinityTerm:
    return AffinityTerm(name, affinity, tuple(OverflowTerm(n, a) for n, a in overflow) if overflow else None)
