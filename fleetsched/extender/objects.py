"""The binding and the candidate clusters as an extender receives them: Karmada-shaped JSON objects
rendered from the core's values.

kube-scheduler sends its extenders the whole Pod and Node objects. The scheduling core does not keep
raw objects, only the frozen values it read (``fleetsched.scheduler.types``), so this module renders
those values back into ``work.karmada.io/v1alpha2`` ResourceBinding / ClusterResourceBinding and
``cluster.karmada.io/v1alpha1`` Cluster objects holding exactly the fields the scheduler read: an
extender can decode them with any Karmada client library, and ``fleetsched.scheduler.convert`` reads
them back into equal values (a unit test holds the two together). Cluster fields the scheduler reads
but an extender has no use for (API enablements, resource models) are left out to keep requests
small. Pure: values in, dicts and bytes out.

A cluster's JSON is rendered once per ``ClusterInfo`` (clusters are immutable values, rebuilt when
the Cluster object changes) and kept in its ``memo``, so a request for 100 clusters costs one join.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import orjson

from fleetsched.api.quantity import Format, Quantity, format_canonical
from fleetsched.api.times import format_time
from fleetsched.scheduler.types import (
    ClusterAffinity,
    ClusterInfo,
    LabelRequirement,
    LabelSelector,
    NodeClaim,
    Placement,
    ReplicaRequirements,
    SchedulingBinding,
    Toleration,
    thaw,
)

__all__ = ["binding_json", "binding_object", "cluster_json", "cluster_object"]

WORK_API_VERSION = "work.karmada.io/v1alpha2"
_MEMO_KEY = ("fleetsched.extender", "cluster-json")


@functools.lru_cache(maxsize=4096)
def _canonical(value: Fraction, fmt: Format) -> str:
    # Formatting a quantity exactly costs ~20 µs; a fleet repeats the same few values (64, 256Gi, ...).
    return format_canonical(value, fmt)


def _quantities(values: Mapping[str, Quantity] | tuple[tuple[str, Quantity], ...]) -> dict[str, str]:
    items = values.items() if isinstance(values, Mapping) else values
    return {name: _canonical(q.value_exact, q.format) for name, q in items}


def _requirements(reqs: tuple[LabelRequirement, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in reqs:
        item: dict[str, Any] = {"key": r.key, "operator": r.operator}
        if r.values:
            item["values"] = list(r.values)
        out.append(item)
    return out


def _label_selector(s: LabelSelector) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if s.match_labels:
        out["matchLabels"] = dict(s.match_labels)
    if s.match_expressions:
        out["matchExpressions"] = _requirements(s.match_expressions)
    return out


def _affinity(a: ClusterAffinity) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if a.label_selector is not None:
        out["labelSelector"] = _label_selector(a.label_selector)
    if a.field_selector is not None:
        out["fieldSelector"] = {"matchExpressions": _requirements(a.field_selector.match_expressions)}
    if a.cluster_names:
        out["clusterNames"] = list(a.cluster_names)
    if a.exclude:
        out["exclude"] = list(a.exclude)
    return out


def _tolerations(ts: tuple[Toleration, ...]) -> list[dict[str, str]]:
    return [
        {k: v for k, v in (("key", t.key), ("operator", t.operator), ("value", t.value),
                           ("effect", t.effect)) if v}
        for t in ts
    ]


def placement_object(p: Placement) -> dict[str, Any]:
    """``spec.placement`` as Karmada writes it (camelCase, empty fields omitted)."""
    out: dict[str, Any] = {}
    if p.cluster_affinity is not None:
        out["clusterAffinity"] = _affinity(p.cluster_affinity)
    if p.cluster_affinities is not None:
        terms = []
        for t in p.cluster_affinities:
            term = {"affinityName": t.name, **_affinity(t.affinity)}
            if t.overflow is not None:
                term["overflowAffinities"] = [
                    {"affinityName": o.name, **_affinity(o.affinity)} for o in t.overflow
                ]
            terms.append(term)
        out["clusterAffinities"] = terms
    if p.cluster_tolerations:
        out["clusterTolerations"] = _tolerations(p.cluster_tolerations)
    if p.spread_constraints:
        out["spreadConstraints"] = [
            {k: v for k, v in (("spreadByField", s.spread_by_field), ("spreadByLabel", s.spread_by_label),
                               ("maxGroups", s.max_groups), ("minGroups", s.min_groups)) if v}
            for s in p.spread_constraints
        ]
    rs = p.replica_scheduling
    if rs is not None:
        rso: dict[str, Any] = {}
        if rs.scheduling_type:
            rso["replicaSchedulingType"] = rs.scheduling_type
        if rs.division_preference:
            rso["replicaDivisionPreference"] = rs.division_preference
        if rs.weight_preference is not None:
            wp: dict[str, Any] = {}
            if rs.weight_preference.static_weight_list:
                wp["staticWeightList"] = [
                    {"targetCluster": _affinity(r.target), "weight": r.weight}
                    for r in rs.weight_preference.static_weight_list
                ]
            if rs.weight_preference.dynamic_weight:
                wp["dynamicWeight"] = rs.weight_preference.dynamic_weight
            rso["weightPreference"] = wp
        out["replicaScheduling"] = rso
    return out


def _node_claim(c: NodeClaim) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if c.hard_node_affinity is not None:
        out["hardNodeAffinity"] = thaw(c.hard_node_affinity)
    if c.node_selector:
        out["nodeSelector"] = dict(c.node_selector)
    if c.tolerations:
        out["tolerations"] = _tolerations(c.tolerations)
    return out


def _replica_requirements(r: ReplicaRequirements) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if r.node_claim is not None:
        out["nodeClaim"] = _node_claim(r.node_claim)
    if r.resource_request:
        out["resourceRequest"] = _quantities(r.resource_request)
    if r.namespace:
        out["namespace"] = r.namespace
    if r.priority_class_name:
        out["priorityClassName"] = r.priority_class_name
    return out


def binding_object(b: SchedulingBinding) -> dict[str, Any]:
    """The binding as a ``work.karmada.io/v1alpha2`` object with the spec fields the scheduler read,
    except the graceful eviction tasks (the core keeps only their clusters, not a valid task)."""
    metadata: dict[str, Any] = {"name": b.name}
    if b.namespace:
        metadata["namespace"] = b.namespace
    res = b.resource
    spec: dict[str, Any] = {
        "resource": {k: v for k, v in (("apiVersion", res.api_version), ("kind", res.kind),
                                       ("namespace", res.namespace), ("name", res.name),
                                       ("uid", res.uid)) if v},
    }
    if b.replicas:
        spec["replicas"] = b.replicas
    if b.replica_requirements is not None:
        spec["replicaRequirements"] = _replica_requirements(b.replica_requirements)
    if b.components:
        comps = []
        for c in b.components:
            comp: dict[str, Any] = {"name": c.name, "replicas": c.replicas}
            if c.replica_requirements is not None:
                comp["replicaRequirements"] = _replica_requirements(c.replica_requirements)
            comps.append(comp)
        spec["components"] = comps
    if b.placement is not None:
        spec["placement"] = placement_object(b.placement)
    if b.clusters:
        spec["clusters"] = [{"name": t.name, "replicas": t.replicas} if t.replicas else {"name": t.name}
                            for t in b.clusters]
    if b.reschedule_triggered_at is not None:
        spec["rescheduleTriggeredAt"] = format_time(b.reschedule_triggered_at)
    if b.affinity_group or b.anti_affinity_group:
        groups = {}
        if b.affinity_group:
            groups["affinityGroup"] = b.affinity_group
        if b.anti_affinity_group:
            groups["antiAffinityGroup"] = b.anti_affinity_group
        spec["workloadAffinityGroups"] = groups
    return {"apiVersion": WORK_API_VERSION, "kind": b.kind, "metadata": metadata, "spec": spec}


def binding_json(b: SchedulingBinding) -> bytes:
    return orjson.dumps(binding_object(b))


def cluster_object(c: ClusterInfo) -> dict[str, Any]:
    """The cluster as a ``cluster.karmada.io/v1alpha1`` Cluster with the fields an extender reads:
    labels, provider, region, zones, taints, syncMode and the resource summary (without
    ``apiVersion``/``kind``, 50 bytes a cluster that say nothing new)."""
    metadata: dict[str, Any] = {"name": c.name}
    if c.labels:
        metadata["labels"] = dict(c.labels)
    spec: dict[str, Any] = {}
    if c.sync_mode:
        spec["syncMode"] = c.sync_mode
    if c.provider:
        spec["provider"] = c.provider
    if c.region:
        spec["region"] = c.region
    if c.zones:
        spec["zones"] = list(c.zones)
    if c.taints:
        spec["taints"] = [
            {k: v for k, v in (("key", t.key), ("value", t.value), ("effect", t.effect)) if v}
            for t in c.taints
        ]
    # Like the items of a kube NodeList, the items carry no apiVersion/kind: ``clusters`` says what they are.
    out: dict[str, Any] = {"metadata": metadata, "spec": spec}
    s = c.resource_summary
    if s is not None:
        summary: dict[str, Any] = {
            "allocatable": _quantities(s.allocatable),
            "allocated": _quantities(s.allocated),
            "allocating": _quantities(s.allocating),
        }
        if s.allocatable_modelings:
            summary["allocatableModelings"] = [
                {"grade": grade, "count": count} for grade, count in s.allocatable_modelings
            ]
        out["status"] = {"resourceSummary": summary}
    return out


def cluster_json(c: ClusterInfo) -> bytes:
    """``cluster_object`` as JSON bytes, rendered once per cluster value."""
    cached = c.memo.get(_MEMO_KEY)
    if cached is None:
        cached = c.memo[_MEMO_KEY] = orjson.dumps(cluster_object(c))
    return cached  # type: ignore[no-any-return]
