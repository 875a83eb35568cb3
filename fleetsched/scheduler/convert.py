"""Conversion of JSON-shaped Karmada objects (Cluster, RB, CRB) to core values.

Owns the one-time translation from Karmada's wire shape (camelCase dicts, as decoded from YAML or
JSON, or dumped by the API models with ``by_alias=True, exclude_unset=True``) to the frozen values
in ``types.py``. No defaults are applied: bindings are taken as written (as the API
server stored them).
Raises ``ConversionError`` naming the field path on malformed input.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from typing import Any

from fleetsched.api.quantity import Quantity, QuantityError, parse_quantity
from fleetsched.scheduler.types import (
    AffinityTerm,
    BindingStatus,
    ClusterAffinity,
    ClusterInfo,
    Component,
    FieldSelector,
    LabelRequirement,
    LabelSelector,
    NamespaceInfo,
    NodeClaim,
    ObjectReference,
    OverflowTerm,
    PeerBinding,
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

__all__ = [
    "ConversionError",
    "binding_from_dict",
    "cluster_from_dict",
    "namespace_from_dict",
    "placement_from_dict",
    "status_from_dict",
]


class ConversionError(ValueError):
    """Malformed input; the message starts with the field path."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


def _map(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConversionError(path, f"must be an object, got {type(value).__name__}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConversionError(path, f"must be a list, got {type(value).__name__}")
    return value


def _str(value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ConversionError(path, f"must be a string, got {type(value).__name__}")
    return value


def _int(value: Any, path: str, *, bits: int = 32) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConversionError(path, f"must be an integer, got {value!r}")
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ConversionError(path, f"must fit in int{bits}, got {value}")
    return value


def _objects(value: Any, path: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    """Each object of a list with its own field path (``path[i]``), for errors that name the field."""
    for i, item in enumerate(_list(value, path)):
        item_path = f"{path}[{i}]"
        yield _map(item, item_path), item_path


def _strs(value: Any, path: str) -> tuple[str, ...]:
    return tuple(_str(v, f"{path}[{i}]") for i, v in enumerate(_list(value, path)))


# Parsed quantity texts, bounded: a Cluster's status heartbeat repeats almost all of its texts
# ("64", "256Gi", "110"), and parsing one is exact rational arithmetic. Quantities are never mutated.
_QUANTITIES: dict[str, Quantity] = {}
_QUANTITIES_LIMIT = 8192


def _quantity(value: Any, path: str) -> Quantity:
    if isinstance(value, Quantity):
        return value
    if type(value) is str:
        found = _QUANTITIES.get(value)
        if found is not None:
            return found
    try:
        parsed = parse_quantity(value)
    except QuantityError as e:
        raise ConversionError(path, str(e)) from None
    if type(value) is str:
        if len(_QUANTITIES) >= _QUANTITIES_LIMIT:
            # Evict the oldest quarter (dicts keep insertion order), not everything at once.
            for key in list(_QUANTITIES)[: _QUANTITIES_LIMIT // 4]:
                _QUANTITIES.pop(key, None)
        _QUANTITIES[value] = parsed
    return parsed


def _quantities(value: Any, path: str) -> dict[str, Quantity]:
    return {str(k): _quantity(v, f"{path}.{k}") for k, v in _map(value, path).items()}


def _time(value: Any, path: str) -> dt.datetime | None:
    """A metav1.Time as Karmada keeps it: one-second precision (metav1.Time).

    The API stores these times as RFC 3339 without fractions, so a reschedule triggered within the
    second of the last schedule is not later than it; fractions in the input are truncated.
    """
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        parsed = value
    elif isinstance(value, dt.date):
        parsed = dt.datetime(value.year, value.month, value.day)
    else:
        text = _str(value, path)
        try:
            parsed = dt.datetime.fromisoformat(text.replace("z", "Z"))
        except ValueError:
            raise ConversionError(path, f"must be an RFC 3339 time, got {text!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.replace(microsecond=0)


def _requirements(value: Any, path: str) -> tuple[LabelRequirement, ...]:
    return tuple(
        LabelRequirement(
            _str(m.get("key"), f"{p}.key"),
            _str(m.get("operator"), f"{p}.operator"),
            _strs(m.get("values"), f"{p}.values"),
        )
        for m, p in _objects(value, path)
    )


def _label_selector(value: Any, path: str) -> LabelSelector | None:
    if value is None:
        return None
    m = _map(value, path)
    labels = _map(m.get("matchLabels"), f"{path}.matchLabels")
    return LabelSelector(
        tuple((str(k), _str(v, f"{path}.matchLabels.{k}")) for k, v in labels.items()),
        _requirements(m.get("matchExpressions"), f"{path}.matchExpressions"),
    )


def _affinity(m: Mapping[str, Any], path: str) -> ClusterAffinity:
    field_selector = None
    if m.get("fieldSelector") is not None:
        fs = _map(m["fieldSelector"], f"{path}.fieldSelector")
        field_selector = FieldSelector(
            _requirements(fs.get("matchExpressions"), f"{path}.fieldSelector.matchExpressions")
        )
    return ClusterAffinity(
        label_selector=_label_selector(m.get("labelSelector"), f"{path}.labelSelector"),
        field_selector=field_selector,
        cluster_names=_strs(m.get("clusterNames"), f"{path}.clusterNames"),
        exclude=_strs(m.get("exclude"), f"{path}.exclude"),
    )


def _tolerations(value: Any, path: str) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            _str(m.get("key"), f"{p}.key"),
            _str(m.get("operator"), f"{p}.operator"),
            _str(m.get("value"), f"{p}.value"),
            _str(m.get("effect"), f"{p}.effect"),
        )
        for m, p in _objects(value, path)
    )


def placement_from_dict(value: Any, path: str = "spec.placement") -> Placement | None:
    if value is None:
        return None
    m = _map(value, path)
    cluster_affinity = None
    if m.get("clusterAffinity") is not None:
        cluster_affinity = _affinity(
            _map(m["clusterAffinity"], f"{path}.clusterAffinity"), f"{path}.clusterAffinity"
        )
    terms: tuple[AffinityTerm, ...] | None = None
    if m.get("clusterAffinities") is not None:
        items = []
        for t, p in _objects(m["clusterAffinities"], f"{path}.clusterAffinities"):
            overflow = None
            if t.get("overflowAffinities") is not None:
                overflow = tuple(
                    OverflowTerm(_str(o.get("affinityName"), f"{q}.affinityName"), _affinity(o, q))
                    for o, q in _objects(t["overflowAffinities"], f"{p}.overflowAffinities")
                )
            items.append(
                AffinityTerm(_str(t.get("affinityName"), f"{p}.affinityName"), _affinity(t, p), overflow)
            )
        terms = tuple(items)
    spreads = [
        SpreadConstraint(
            _str(s.get("spreadByField"), f"{p}.spreadByField"),
            _str(s.get("spreadByLabel"), f"{p}.spreadByLabel"),
            _int(s.get("maxGroups"), f"{p}.maxGroups", bits=64),
            _int(s.get("minGroups"), f"{p}.minGroups", bits=64),
        )
        for s, p in _objects(m.get("spreadConstraints"), f"{path}.spreadConstraints")
    ]
    replica_scheduling = None
    if m.get("replicaScheduling") is not None:
        p = f"{path}.replicaScheduling"
        rs = _map(m["replicaScheduling"], p)
        wp = None
        if rs.get("weightPreference") is not None:
            wpm = _map(rs["weightPreference"], f"{p}.weightPreference")
            rules = [
                StaticWeightRule(
                    _affinity(_map(r.get("targetCluster"), f"{q}.targetCluster"), f"{q}.targetCluster"),
                    _int(r.get("weight"), f"{q}.weight", bits=64),
                )
                for r, q in _objects(wpm.get("staticWeightList"), f"{p}.weightPreference.staticWeightList")
            ]
            wp = WeightPreference(
                tuple(rules), _str(wpm.get("dynamicWeight"), f"{p}.weightPreference.dynamicWeight")
            )
        replica_scheduling = ReplicaScheduling(
            _str(rs.get("replicaSchedulingType"), f"{p}.replicaSchedulingType"),
            _str(rs.get("replicaDivisionPreference"), f"{p}.replicaDivisionPreference"),
            wp,
        )
    return Placement(
        cluster_affinity=cluster_affinity,
        cluster_affinities=terms,
        cluster_tolerations=_tolerations(m.get("clusterTolerations"), f"{path}.clusterTolerations"),
        spread_constraints=tuple(spreads),
        replica_scheduling=replica_scheduling,
    )


def _replica_requirements(value: Any, path: str) -> ReplicaRequirements | None:
    if value is None:
        return None
    m = _map(value, path)
    claim = None
    if m.get("nodeClaim") is not None:
        c = _map(m["nodeClaim"], f"{path}.nodeClaim")
        selector = _map(c.get("nodeSelector"), f"{path}.nodeClaim.nodeSelector")
        hard = c.get("hardNodeAffinity")
        claim = NodeClaim(
            node_selector=tuple(
                (str(k), _str(v, f"{path}.nodeClaim.nodeSelector.{k}")) for k, v in selector.items()
            ),
            tolerations=_tolerations(c.get("tolerations"), f"{path}.nodeClaim.tolerations"),
            hard_node_affinity=_map(hard, f"{path}.nodeClaim.hardNodeAffinity") if hard is not None else None,
        )
    requests = _quantities(m.get("resourceRequest"), f"{path}.resourceRequest")
    return ReplicaRequirements(
        resource_request=tuple(requests.items()),
        node_claim=claim,
        namespace=_str(m.get("namespace"), f"{path}.namespace"),
        priority_class_name=_str(m.get("priorityClassName"), f"{path}.priorityClassName"),
    )


def binding_from_dict(obj: Mapping[str, Any]) -> SchedulingBinding:
    kind = _str(obj.get("kind"), "kind") or "ResourceBinding"
    md = _map(obj.get("metadata"), "metadata")
    spec = _map(obj.get("spec"), "spec")
    res = _map(spec.get("resource"), "spec.resource")
    clusters = [
        TargetCluster(_str(t.get("name"), f"{p}.name"), _int(t.get("replicas"), f"{p}.replicas"))
        for t, p in _objects(spec.get("clusters"), "spec.clusters")
    ]
    components = [
        Component(
            _str(c.get("name"), f"{p}.name"),
            _int(c.get("replicas"), f"{p}.replicas"),
            _replica_requirements(c.get("replicaRequirements"), f"{p}.replicaRequirements"),
        )
        for c, p in _objects(spec.get("components"), "spec.components")
    ]
    groups = _map(spec.get("workloadAffinityGroups"), "spec.workloadAffinityGroups")
    evicting = tuple(
        _str(t.get("fromCluster"), f"{p}.fromCluster")
        for t, p in _objects(spec.get("gracefulEvictionTasks"), "spec.gracefulEvictionTasks")
    )
    return SchedulingBinding(
        kind=kind,
        name=_str(md.get("name"), "metadata.name"),
        namespace=_str(md.get("namespace"), "metadata.namespace") if kind != "ClusterResourceBinding" else "",
        resource=ObjectReference(
            api_version=_str(res.get("apiVersion"), "spec.resource.apiVersion"),
            kind=_str(res.get("kind"), "spec.resource.kind"),
            namespace=_str(res.get("namespace"), "spec.resource.namespace"),
            name=_str(res.get("name"), "spec.resource.name"),
            uid=_str(res.get("uid"), "spec.resource.uid"),
        ),
        replicas=_int(spec.get("replicas"), "spec.replicas"),
        replica_requirements=_replica_requirements(
            spec.get("replicaRequirements"), "spec.replicaRequirements"
        ),
        components=tuple(components),
        clusters=tuple(clusters),
        placement=placement_from_dict(spec.get("placement")),
        evicting_clusters=evicting,
        reschedule_triggered_at=_time(spec.get("rescheduleTriggeredAt"), "spec.rescheduleTriggeredAt"),
        affinity_group=_str(groups.get("affinityGroup"), "spec.workloadAffinityGroups.affinityGroup"),
        anti_affinity_group=_str(
            groups.get("antiAffinityGroup"), "spec.workloadAffinityGroups.antiAffinityGroup"
        ),
        labels=_string_map(md.get("labels"), "metadata.labels"),
        annotations=_string_map(md.get("annotations"), "metadata.annotations"),
    )


def _string_map(raw: Any, path: str) -> dict[str, str]:
    """A ``map[string]string`` of metadata; an entry that is not a string names its key."""
    return {str(k): _str(v, f"{path}.{k}") for k, v in _map(raw, path).items()}


def namespace_from_dict(obj: Mapping[str, Any]) -> NamespaceInfo:
    """A Namespace as plugins read it through the listers: its name, labels and annotations."""
    md = _map(obj.get("metadata"), "metadata")
    return NamespaceInfo(
        name=_str(md.get("name"), "metadata.name"),
        labels=_string_map(md.get("labels"), "metadata.labels"),
        annotations=_string_map(md.get("annotations"), "metadata.annotations"),
    )


def peer_from_dict(obj: Mapping[str, Any]) -> PeerBinding:
    """A ResourceBinding as a peer of the workload (anti-)affinity plugins."""
    md = _map(obj.get("metadata"), "metadata")
    spec = _map(obj.get("spec"), "spec")
    groups = _map(spec.get("workloadAffinityGroups"), "spec.workloadAffinityGroups")
    return PeerBinding(
        namespace=_str(md.get("namespace"), "metadata.namespace"),
        name=_str(md.get("name"), "metadata.name"),
        affinity_group=_str(groups.get("affinityGroup"), "spec.workloadAffinityGroups.affinityGroup"),
        anti_affinity_group=_str(
            groups.get("antiAffinityGroup"), "spec.workloadAffinityGroups.antiAffinityGroup"
        ),
        targets=frozenset(
            _str(t.get("name"), f"{p}.name") for t, p in _objects(spec.get("clusters"), "spec.clusters")
        ),
    )


def status_from_dict(obj: Mapping[str, Any]) -> BindingStatus:
    status = _map(obj.get("status"), "status")
    return BindingStatus(
        scheduler_observing_affinity_name=_str(
            status.get("schedulerObservingAffinityName"), "status.schedulerObservingAffinityName"
        ),
        last_scheduled_time=_time(status.get("lastScheduledTime"), "status.lastScheduledTime"),
    )


def cluster_from_dict(obj: Mapping[str, Any]) -> ClusterInfo:
    md = _map(obj.get("metadata"), "metadata")
    spec = _map(obj.get("spec"), "spec")
    status = _map(obj.get("status"), "status")
    labels = {
        str(k): _str(v, f"metadata.labels.{k}") for k, v in _map(md.get("labels"), "metadata.labels").items()
    }
    zones = _strs(spec.get("zones"), "spec.zones")
    taints = [
        Taint(
            _str(t.get("key"), f"{p}.key"),
            _str(t.get("value"), f"{p}.value"),
            _str(t.get("effect"), f"{p}.effect"),
        )
        for t, p in _objects(spec.get("taints"), "spec.taints")
    ]
    apis: set[tuple[str, str]] = set()
    for e, p in _objects(status.get("apiEnablements"), "status.apiEnablements"):
        gv = _str(e.get("groupVersion"), f"{p}.groupVersion")
        for r, q in _objects(e.get("resources"), f"{p}.resources"):
            apis.add((gv, _str(r.get("kind"), f"{q}.kind")))
    summary = None
    if status.get("resourceSummary") is not None:
        p = "status.resourceSummary"
        s = _map(status["resourceSummary"], p)
        modelings = tuple(
            (_int(m.get("grade"), f"{q}.grade"), _int(m.get("count"), f"{q}.count", bits=64))
            for m, q in _objects(s.get("allocatableModelings"), f"{p}.allocatableModelings")
        )
        summary = ResourceSummary(
            allocatable=_quantities(s.get("allocatable"), f"{p}.allocatable"),
            allocated=_quantities(s.get("allocated"), f"{p}.allocated"),
            allocating=_quantities(s.get("allocating"), f"{p}.allocating"),
            allocatable_modelings=modelings,
        )
    models = [
        ResourceModel(
            # ranges before grade: the first bad field reported is the one it always was
            ranges=tuple(
                (
                    _str(r.get("name"), f"{q}.name"),
                    _quantity(r.get("min", 0), f"{q}.min"),
                    _quantity(r.get("max", 0), f"{q}.max"),
                )
                for r, q in _objects(m.get("ranges"), f"{p}.ranges")
            ),
            grade=_int(m.get("grade"), f"{p}.grade"),
        )
        for m, p in _objects(spec.get("resourceModels"), "spec.resourceModels")
    ]
    return ClusterInfo(
        name=_str(md.get("name"), "metadata.name"),
        labels=labels,
        provider=_str(spec.get("provider"), "spec.provider"),
        region=_str(spec.get("region"), "spec.region"),
        zones=zones,
        taints=tuple(taints),
        deleting=md.get("deletionTimestamp") not in (None, ""),
        api_enablements=frozenset(apis),
        resource_summary=summary,
        resource_models=tuple(models),
        sync_mode=_str(spec.get("syncMode"), "spec.syncMode"),
    )
