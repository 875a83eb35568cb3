"""Plain frozen values the scheduling core works on.

Owns the core's view of Clusters, bindings and placements: converted once per object from the
API (see ``convert.py``) and never re-validated inside the scheduling loop. Must not import
pydantic models, kopf, a Kubernetes client or anything that does I/O.
"""

from __future__ import annotations

import copyreg
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any, NewType

from fleetsched.api.quantity import Quantity

__all__ = [
    "MAX_INT32",
    "AffinityTerm",
    "AssumedLoad",
    "AssumedWorkload",
    "BindingStatus",
    "ClusterAffinity",
    "ClusterInfo",
    "ClusterMemo",
    "ClusterSelection",
    "Component",
    "FieldSelector",
    "FrozenDict",
    "FrozenList",
    "LabelRequirement",
    "LabelSelector",
    "NamespaceInfo",
    "NodeClaim",
    "ObjectReference",
    "OverflowTerm",
    "PeerBinding",
    "Placement",
    "ReplicaRequirements",
    "ReplicaScheduling",
    "ResourceModel",
    "ResourceSummary",
    "SchedulingBinding",
    "SpreadConstraint",
    "StaticWeightRule",
    "Taint",
    "TargetCluster",
    "Toleration",
    "WeightPreference",
    "deep_freeze",
    "frozen_mapping",
    "thaw",
]

ClusterName = NewType("ClusterName", str)

MAX_INT32 = 2**31 - 1

# Karmada's constants (pkg/apis/policy/v1alpha1).
DUPLICATED = "Duplicated"
DIVIDED = "Divided"
AGGREGATED = "Aggregated"
WEIGHTED = "Weighted"

SPREAD_BY_CLUSTER = "cluster"
SPREAD_BY_REGION = "region"
SPREAD_BY_ZONE = "zone"
SPREAD_BY_PROVIDER = "provider"


def _read_only(self: Any, *args: Any, **kwargs: Any) -> Any:
    raise TypeError(f"'{type(self).__name__}' is read-only: the scheduler's views serve every decision")


# The read-only mapping of the views plugins read (labels, annotations, resource lists, a PostFilter
# diagnosis): a ``types.MappingProxyType`` over a private copy. Not a dict subclass, so no dict method
# called on it (``dict.clear(cluster.labels)``, ``dict.__setitem__``) can change it; reads are the
# dict's own C code through the proxy, it compares equal to a dict of the same items, ``copy()`` and
# ``dict(x)`` give an ordinary dict, and it pickles (``simulate --jobs``; registered below).
FrozenDict = MappingProxyType

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


def _mapping_proxy(values: dict[Any, Any]) -> Mapping[Any, Any]:
    return MappingProxyType(values)


def _reduce_mapping_proxy(value: MappingProxyType[Any, Any]) -> tuple[Any, ...]:
    return (_mapping_proxy, (dict(value),))


copyreg.pickle(MappingProxyType, _reduce_mapping_proxy)


def frozen_mapping(values: Mapping[Any, Any] | None = None) -> Mapping[Any, Any]:
    """``values`` as a read-only mapping over a private copy (the same object when it is one already)."""
    if type(values) is MappingProxyType:
        return values
    return MappingProxyType(dict(values)) if values else _EMPTY


class FrozenList(list):  # type: ignore[type-arg]
    """A list that cannot be changed in place (``FrozenDict``'s counterpart for JSON-shaped values:
    still a ``list`` to whoever checks, and serialised as one)."""

    __slots__ = ()

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = _read_only
    sort = reverse = __iadd__ = __imul__ = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def copy(self) -> list[Any]:  # type: ignore[override]
        return list(self)


def deep_freeze(value: Any) -> Any:
    """A JSON-shaped value with every mapping read-only (``frozen_mapping``) and every list a FrozenList."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: deep_freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList(deep_freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A ``deep_freeze``d value as plain dicts and lists again, for serialisers that take only those."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value


class ClusterMemo(dict):  # type: ignore[type-arg]
    """Values that depend only on one (immutable) cluster, remembered by whoever computes them under
    a key object of their own (a private module-level ``object()`` or class): ``memo.get(key)`` and
    ``memo[key] = value``. Nobody can list, remove or replace the entries of others without their key:
    iteration, ``keys()``/``items()``/``values()``, ``del``, ``clear``, ``pop``, ``update`` raise
    ``TypeError``. A cache: it pickles empty."""

    __slots__ = ()

    __iter__ = __reversed__ = keys = values = items = copy = __delitem__ = clear = _read_only
    pop = popitem = update = __ior__ = __or__ = __ror__ = _read_only

    def __repr__(self) -> str:
        return f"ClusterMemo({len(self)} entries)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ClusterMemo, ())


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[LabelRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class FieldSelector:
    match_expressions: tuple[LabelRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class ClusterAffinity:
    label_selector: LabelSelector | None = None
    field_selector: FieldSelector | None = None
    cluster_names: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class OverflowTerm:
    name: str
    affinity: ClusterAffinity


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    name: str
    affinity: ClusterAffinity
    # None and () differ in Karmada (a non-nil list activates overflow assignment, §10.1).
    overflow: tuple[OverflowTerm, ...] | None = None


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = ""

    def render(self) -> str:
        """Taint text as kube renders it: ``key=value:effect`` or ``key:effect``."""
        if self.value:
            return f"{self.key}={self.value}:{self.effect}"
        return f"{self.key}:{self.effect}"


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    spread_by_field: str = ""
    spread_by_label: str = ""
    max_groups: int = 0
    min_groups: int = 0


@dataclass(frozen=True, slots=True)
class StaticWeightRule:
    target: ClusterAffinity
    weight: int


@dataclass(frozen=True, slots=True)
class WeightPreference:
    static_weight_list: tuple[StaticWeightRule, ...] = ()
    dynamic_weight: str = ""


@dataclass(frozen=True, slots=True)
class ReplicaScheduling:
    scheduling_type: str = ""
    division_preference: str = ""
    weight_preference: WeightPreference | None = None


@dataclass(frozen=True, slots=True)
class Placement:
    cluster_affinity: ClusterAffinity | None = None
    cluster_affinities: tuple[AffinityTerm, ...] | None = None
    cluster_tolerations: tuple[Toleration, ...] = ()
    spread_constraints: tuple[SpreadConstraint, ...] = ()
    replica_scheduling: ReplicaScheduling | None = None

    def is_duplicated(self) -> bool:
        rs = self.replica_scheduling
        return rs is None or rs.scheduling_type == DUPLICATED


@dataclass(frozen=True, slots=True)
class NodeClaim:
    """Per-replica node constraints; only the accurate estimator reads them."""

    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    # Kept as the JSON-shaped NodeSelector ({nodeSelectorTerms: [...]}) for estimator clients.
    hard_node_affinity: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.hard_node_affinity is not None and type(self.hard_node_affinity) is not FrozenDict:
            object.__setattr__(self, "hard_node_affinity", deep_freeze(self.hard_node_affinity))


@dataclass(frozen=True, slots=True)
class ReplicaRequirements:
    resource_request: tuple[tuple[str, Quantity], ...] = ()
    node_claim: NodeClaim | None = None
    namespace: str = ""
    priority_class_name: str = ""

    def request_key(self) -> tuple[tuple[str, Fraction], ...]:
        """What the general estimator depends on: the per-replica request, by exact value."""
        return tuple(sorted((name, q.value_exact) for name, q in self.resource_request))


@dataclass(frozen=True, slots=True)
class Component:
    name: str
    replicas: int
    replica_requirements: ReplicaRequirements | None = None


@dataclass(frozen=True, slots=True)
class TargetCluster:
    name: str
    replicas: int = 0
    # Multi-template results only (gate MultiplePodTemplatesScheduling, §12): (component, replicas).
    components: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class ObjectReference:
    api_version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""


@dataclass(frozen=True, slots=True)
class SchedulingBinding:
    """The scheduler's read of a ResourceBinding or ClusterResourceBinding spec."""

    kind: str  # "ResourceBinding" | "ClusterResourceBinding"
    name: str
    namespace: str = ""
    resource: ObjectReference = ObjectReference()
    replicas: int = 0
    replica_requirements: ReplicaRequirements | None = None
    components: tuple[Component, ...] = ()
    clusters: tuple[TargetCluster, ...] = ()
    placement: Placement | None = None
    evicting_clusters: tuple[str, ...] = ()
    reschedule_triggered_at: dt.datetime | None = None
    # spec.workloadAffinityGroups (alpha, gate WorkloadAffinity): "key=value" or "".
    affinity_group: str = ""
    anti_affinity_group: str = ""
    # metadata.labels and metadata.annotations (read-only). Left out of the hash, kept in equality.
    # A plugin whose answer reads them puts what it reads into its ``binding_key`` (docs/plugin-api.md).
    labels: Mapping[str, str] = field(default_factory=frozen_mapping, hash=False)
    annotations: Mapping[str, str] = field(default_factory=frozen_mapping, hash=False)

    def __post_init__(self) -> None:
        if type(self.labels) is not FrozenDict:
            object.__setattr__(self, "labels", frozen_mapping(self.labels))
        if type(self.annotations) is not FrozenDict:
            object.__setattr__(self, "annotations", frozen_mapping(self.annotations))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def is_workload(self) -> bool:
        """Karmada's IsWorkload: replicas, requirements or components make a workload (§2.1)."""
        return self.replicas > 0 or self.replica_requirements is not None or len(self.components) >= 1

    def target_names(self) -> frozenset[str]:
        return frozenset(t.name for t in self.clusters)

    def generated_name(self) -> str:
        """The binding name Karmada derives from the resource: ``<name>-<kind>`` lowercased, ':' -> '.'."""
        return f"{self.resource.name}-{self.resource.kind}".lower().replace(":", ".")


@dataclass(frozen=True, slots=True, eq=False)
class NamespaceInfo:
    """A Namespace as plugins read it through ``Handle.listers`` (read-only; compared by identity)."""

    name: str
    labels: Mapping[str, str] = field(default_factory=frozen_mapping)
    annotations: Mapping[str, str] = field(default_factory=frozen_mapping)

    def __post_init__(self) -> None:
        if type(self.labels) is not FrozenDict:
            object.__setattr__(self, "labels", frozen_mapping(self.labels))
        if type(self.annotations) is not FrozenDict:
            object.__setattr__(self, "annotations", frozen_mapping(self.annotations))


@dataclass(frozen=True, slots=True)
class AssumedWorkload:
    """A footprint decided onto a cluster but not yet visible in its status (gate
    SchedulingOvercommitProtection): the binding's namespace and its components,
    a single-template binding as one synthetic component named after its resource."""

    namespace: str
    components: tuple[Component, ...]


@dataclass(frozen=True, slots=True)
class AssumedLoad:
    """What assumed workloads add up to, counted as the general estimator counts them: ``pods`` and
    ``resources`` join ``allocating`` on the replica path (components with replicas > 0; cpu as MilliValue
    × replicas in cores, other resources as Value() × replicas); ``set_pods`` and ``set_units`` are
    deducted on the component-set path (every component; each request converted by its format, milli-units
    for decimal ones)."""

    pods: int = 0
    resources: Mapping[str, Fraction] = field(default_factory=frozen_mapping)
    set_pods: int = 0
    set_units: Mapping[str, int] = field(default_factory=frozen_mapping)

    def __post_init__(self) -> None:
        if type(self.resources) is not FrozenDict:
            object.__setattr__(self, "resources", frozen_mapping(self.resources))
        if type(self.set_units) is not FrozenDict:
            object.__setattr__(self, "set_units", frozen_mapping(self.set_units))

    @staticmethod
    def of(workloads: Iterable[AssumedWorkload]) -> AssumedLoad:
        pods = set_pods = 0
        resources: dict[str, Fraction] = {}
        set_units: dict[str, int] = {}
        for workload in workloads:
            for c in workload.components:
                r = c.replicas
                set_pods += r
                requirements = c.replica_requirements
                request = requirements.resource_request if requirements is not None else ()
                for name, q in request:
                    set_units[name] = set_units.get(name, 0) + q.format_units() * r
                if r <= 0:
                    continue
                pods += r
                for name, q in request:
                    amount = Fraction(q.milli_value() * r, 1000) if name == "cpu" else Fraction(q.value() * r)
                    resources[name] = resources.get(name, Fraction(0)) + amount
        return AssumedLoad(pods, resources, set_pods, set_units)

    def totals(self) -> dict[str, Fraction]:
        """Pods (when any) and each resource, as the replica path deducts them."""
        return {"pods": Fraction(self.pods), **self.resources} if self.pods else dict(self.resources)

    def plus(self, other: AssumedLoad, sign: int = 1) -> AssumedLoad:
        """This load with ``other`` added (``sign`` -1: taken away)."""
        resources = dict(self.resources)
        for name, amount in other.resources.items():
            resources[name] = resources.get(name, Fraction(0)) + sign * amount
            if not resources[name]:
                del resources[name]
        set_units = dict(self.set_units)
        for name, units in other.set_units.items():
            set_units[name] = set_units.get(name, 0) + sign * units
            if not set_units[name]:
                del set_units[name]
        return AssumedLoad(
            self.pods + sign * other.pods, resources, self.set_pods + sign * other.set_pods, set_units
        )


@dataclass(frozen=True, slots=True)
class PeerBinding:
    """Another ResourceBinding as the workload (anti-)affinity plugins see it."""

    namespace: str
    name: str
    affinity_group: str = ""
    anti_affinity_group: str = ""
    targets: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class BindingStatus:
    """The status fields the algorithm reads."""

    scheduler_observing_affinity_name: str = ""
    last_scheduled_time: dt.datetime | None = None


@dataclass(frozen=True, slots=True)
class ResourceSummary:
    allocatable: Mapping[str, Quantity]
    allocated: Mapping[str, Quantity]
    allocating: Mapping[str, Quantity]
    allocatable_modelings: tuple[tuple[int, int], ...] = ()  # (grade, count)

    def __post_init__(self) -> None:
        for name in ("allocatable", "allocated", "allocating"):
            value = getattr(self, name)
            if type(value) is not FrozenDict:
                object.__setattr__(self, name, frozen_mapping(value))


@dataclass(frozen=True, slots=True)
class ResourceModel:
    grade: int
    ranges: tuple[tuple[str, Quantity, Quantity], ...]  # (name, min, max)


@dataclass(frozen=True, slots=True, eq=False)
class ClusterInfo:
    """One member cluster as the scheduler sees it. Compared and hashed by identity. Deeply read-only
    (tuples, frozen values, ``frozen_mapping`` mappings): the same value serves every decision and every
    plugin, so none may change it; ``memo`` is a ``ClusterMemo`` (see there)."""

    name: str
    labels: Mapping[str, str] = field(default_factory=frozen_mapping)
    provider: str = ""
    region: str = ""
    zones: tuple[str, ...] = ()
    taints: tuple[Taint, ...] = ()
    deleting: bool = False
    api_enablements: frozenset[tuple[str, str]] = frozenset()  # (groupVersion, kind)
    resource_summary: ResourceSummary | None = None
    resource_models: tuple[ResourceModel, ...] = ()
    sync_mode: str = ""  # spec.syncMode: "Push" or "Pull" (only the accurate estimator client reads it)
    # In-flight footprints the estimators deduct (gate SchedulingOvercommitProtection; scheduler/assume.py
    # lays them over a snapshot's clusters). Empty: the status alone counts.
    assumed: tuple[AssumedWorkload, ...] = ()
    # Their sum (``AssumedLoad.of(assumed)``), kept by the assume record as they change; None: summed
    # from ``assumed`` when needed.
    assumed_load: AssumedLoad | None = None
    # Memo of values that depend only on this (immutable) cluster, e.g. estimates per request.
    memo: dict[Any, Any] = field(default_factory=ClusterMemo, repr=False)

    def __post_init__(self) -> None:
        if type(self.labels) is not FrozenDict:
            object.__setattr__(self, "labels", frozen_mapping(self.labels))
        if type(self.memo) is not ClusterMemo:
            # (``dataclasses.replace(c, memo={})`` starts an empty one; a given dict's entries are kept)
            object.__setattr__(self, "memo", ClusterMemo(self.memo))


class ClusterSelection(tuple):  # type: ignore[type-arg]
    """Some clusters of one snapshot, in order, with their ``positions`` in ``snapshot`` (the
    snapshot's cluster tuple). A tuple of ``ClusterInfo`` to anyone else; a batch consumer that
    keeps per-snapshot tables (the general estimator) indexes them by position instead of finding
    every cluster."""

    snapshot: tuple[ClusterInfo, ...]
    positions: Sequence[int]

    def __new__(
        cls, clusters: Iterable[ClusterInfo], snapshot: tuple[ClusterInfo, ...], positions: Sequence[int]
    ) -> ClusterSelection:
        self = super().__new__(cls, clusters)
        self.snapshot = snapshot
        self.positions = positions
        return self
