"""ClusterResourcesFit score: kube-scheduler's NodeResourcesFit scoring strategies applied to clusters.

Off by default (not in the default profile): enable it at ``score`` in a profile and configure it
with ``pluginConfig`` args shaped like kube-scheduler's ``NodeResourcesFitArgs``::

    scoringStrategy:
      type: MostAllocated            # LeastAllocated (default) | MostAllocated | RequestedToCapacityRatio
      resources:                     # default: cpu and memory, weight 1 each
      - {name: nvidia.com/gpu, weight: 5}
      requestedToCapacityRatio:      # only read with type RequestedToCapacityRatio (then required)
        shape:                       # utilization 0..100, strictly increasing; score 0..10
        - {utilization: 0, score: 10}
        - {utilization: 100, score: 0}

What it reads. The cluster's ``status.resourceSummary``: allocatable, allocated and allocating per
resource, counted as the general estimator counts them (CPU in millicores, every other resource in
whole units, rounded up); ``used = allocated + allocating``. The binding's per-replica request
(``spec.replicaRequirements.resourceRequest``). Nothing else: it declares the cluster facet
RESOURCES and the request as its binding key, so its scores are reused across bindings with the same
request until a cluster's resource summary changes.

What "after placement" means. kube-scheduler scores one pod on one node. A binding's replicas are
divided among clusters after scoring, so the score cannot know how many of them a cluster will get.
The score is the cluster's utilisation after ONE more replica, kube's one pod:
``requested = used + per-replica request``. Scaling the request by ``min(replicas, what fits)`` was
considered and rejected: a cluster with slightly more free room then takes one more replica and
looks fuller, so more free capacity could raise a MostAllocated score (binpack would not be
monotone), and the score would depend on the replica count, so it could be reused less. Two rules
make binpack behave:

* A cluster that cannot take even one replica (some requested resource has less free than the
  per-replica request, or is not reported) scores 0, whatever the strategy: it is not a candidate
  for packing (kube's Fit filter would have rejected such a node before scoring).
* An extended resource (``nvidia.com/gpu`` ...) that the binding does not request is left out of
  the score on every cluster, as kube does, so a GPU weight does not move CPU-only workloads.

A resource the cluster does not report counts as 0 allocatable, which scores 0 for that resource
(LeastAllocated and MostAllocated keep its weight in the mean, so a cluster reporting less never
looks better; kube skips such a resource, which it meets only for unrequested ones). A binding
without replica requirements requests nothing: its score is the clusters' current utilisation
(kube's non-zero defaults for pods without requests are not applied; Karmada's estimator does not
apply them either).

Formulas (kube-scheduler's ``least_allocated.go``, ``most_allocated.go``,
``requested_to_capacity_ratio.go``, integer arithmetic as there), per resource with
``capacity = allocatable``:

* LeastAllocated: ``(capacity - requested) * 100 // capacity``; 0 when capacity is 0 or
  ``requested > capacity``. Cluster score: ``sum(score * weight) // sum(weight)``.
* MostAllocated: ``requested * 100 // capacity`` with requested capped at capacity; 0 when capacity
  is 0. Same weighted mean.
* RequestedToCapacityRatio: the shape's scores scaled by 10 (0..10 -> 0..100) and interpolated
  linearly (Go's truncating division) at ``utilization = requested * 100 // capacity`` (at 100 when
  capacity is 0 or exceeded); the weighted mean counts only resources scoring above 0 and rounds
  half away from zero.

NormalizeScore maps the raw scores of the feasible clusters to 0..100 by min-max; when all raw
scores are equal every cluster gets 100 (as the classic binpack plugin does). The profile's weight
then multiplies the normalised score (the runtime applies it).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from fleetsched.api.resources import is_scalar_resource
from fleetsched.plugin import MAX_SCORE, ClusterFacet, ClusterInfo, FilterContext, Handle
from fleetsched.scheduler.types import SchedulingBinding

__all__ = [
    "DEFAULT_RESOURCES",
    "LEAST_ALLOCATED",
    "MOST_ALLOCATED",
    "NAME",
    "REQUESTED_TO_CAPACITY_RATIO",
    "ClusterResourcesFit",
    "ClusterResourcesFitArgs",
    "ResourceScore",
    "ResourceSpec",
    "ScoringStrategy",
    "ShapePoint",
    "Usage",
    "fits_one_replica",
    "new",
    "normalize_min_max",
    "parse_resources",
    "parse_scoring_strategy",
    "request_of",
    "usage_of",
]

NAME = "ClusterResourcesFit"

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SCORING_STRATEGY_TYPES: tuple[str, ...] = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

# kube-scheduler's bounds: resource weights (0, 100], shape utilisation [0, 100], shape score [0, 10]
# (config.MaxCustomPriorityScore), scaled to the node score range by MaxNodeScore / 10.
MAX_RESOURCE_WEIGHT = 100
MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10

CPU = "cpu"


# ---- args --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """One scored resource and its weight (kube's ``ResourceSpec``)."""

    name: str
    weight: int = 1


@dataclass(frozen=True, slots=True)
class ShapePoint:
    """One point of a RequestedToCapacityRatio shape; ``score`` already scaled to 0..100."""

    utilization: int
    score: int


DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    """The validated ``scoringStrategy``."""

    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[ShapePoint, ...] = ()


class _ArgsError(ValueError):
    """One problem in the args: ``path: reason`` (the runtime prefixes profile and plugin)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")


def _mapping(raw: Any, path: str, known: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise _ArgsError(path, f"must be a mapping, got {type(raw).__name__}")
    for key in raw:
        if key not in known:
            raise _ArgsError(f"{path}.{key}", f"unknown field (known: {', '.join(sorted(known))})")
    return raw


def _int(raw: Any, path: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise _ArgsError(path, f"must be an integer, got {raw!r}")
    return raw


def _list(raw: Any, path: str) -> list[Any]:
    if not isinstance(raw, list | tuple):
        raise _ArgsError(path, f"must be a list, got {type(raw).__name__}")
    return list(raw)


def parse_resources(
    raw: Any, path: str, *, default: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
) -> tuple[ResourceSpec, ...]:
    """``resources: [{name, weight}]``; absent or empty means ``default``. A weight not written is 1
    (kube's default); a written weight must be in (0, 100]; a name may appear once."""
    if raw is None:
        return default
    items = _list(raw, path)
    if not items:
        return default
    out: list[ResourceSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        where = f"{path}[{i}]"
        item = _mapping(item, where, ("name", "weight"))
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise _ArgsError(f"{where}.name", "required: a resource name such as cpu or nvidia.com/gpu")
        if name in seen:
            raise _ArgsError(f"{where}.name", f"duplicate value {name!r}")
        seen.add(name)
        weight = 1 if item.get("weight") is None else _int(item["weight"], f"{where}.weight")
        if not 0 < weight <= MAX_RESOURCE_WEIGHT:
            raise _ArgsError(
                f"{where}.weight", f"resource weight of {name} not in valid range (0, {MAX_RESOURCE_WEIGHT}]"
            )
        out.append(ResourceSpec(name, weight))
    return tuple(out)


def _parse_shape(raw: Any, path: str) -> tuple[ShapePoint, ...]:
    ratio = _mapping(raw, path, ("shape",))
    shape_path = f"{path}.shape"
    points = _list(ratio.get("shape") or [], shape_path)
    if not points:
        raise _ArgsError(shape_path, "at least one point must be specified")
    out: list[ShapePoint] = []
    for i, point in enumerate(points):
        where = f"{shape_path}[{i}]"
        point = _mapping(point, where, ("utilization", "score"))
        for key in ("utilization", "score"):
            if key not in point:
                raise _ArgsError(f"{where}.{key}", "required")
        utilization = _int(point["utilization"], f"{where}.utilization")
        score = _int(point["score"], f"{where}.score")
        if not 0 <= utilization <= MAX_UTILIZATION:
            raise _ArgsError(
                f"{where}.utilization", f"{utilization} not in valid range [0, {MAX_UTILIZATION}]"
            )
        if not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise _ArgsError(f"{where}.score", f"{score} not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
        if out and utilization <= out[-1].utilization:
            raise _ArgsError(f"{where}.utilization", "values must be sorted in increasing order")
        # kube scales the shape's 0..10 to the node score range: score * (MaxNodeScore / 10).
        out.append(ShapePoint(utilization, score * (MAX_SCORE // MAX_CUSTOM_PRIORITY_SCORE)))
    return tuple(out)


def parse_scoring_strategy(raw: Any) -> ScoringStrategy:
    """The validated ``scoringStrategy`` (absent: LeastAllocated on cpu and memory, weight 1).
    Raises ``ValueError`` as ``field.path: reason``, one line."""
    if raw is None:
        return ScoringStrategy()
    path = "scoringStrategy"
    raw = _mapping(raw, path, ("type", "resources", "requestedToCapacityRatio"))
    kind = LEAST_ALLOCATED if raw.get("type") is None else raw["type"]
    if kind not in SCORING_STRATEGY_TYPES:
        supported = ", ".join(SCORING_STRATEGY_TYPES)
        raise _ArgsError(f"{path}.type", f"unsupported value {kind!r} (supported: {supported})")
    resources = parse_resources(raw.get("resources"), f"{path}.resources")
    shape: tuple[ShapePoint, ...] = ()
    ratio = raw.get("requestedToCapacityRatio")
    if ratio is not None:
        # Validated whatever the type (as kube does), read only by RequestedToCapacityRatio.
        shape = _parse_shape(ratio, f"{path}.requestedToCapacityRatio")
    elif kind == REQUESTED_TO_CAPACITY_RATIO:
        raise _ArgsError(f"{path}.requestedToCapacityRatio.shape", "at least one point must be specified")
    return ScoringStrategy(kind, resources, shape if kind == REQUESTED_TO_CAPACITY_RATIO else ())


@dataclass(frozen=True, slots=True)
class ClusterResourcesFitArgs:
    """The plugin's args as written in ``pluginConfig`` (the file's camelCase field name).

    Validated on construction (the runtime builds it once, at start-up); ``strategy()`` is the
    typed value.
    """

    scoringStrategy: Mapping[str, Any] | None = None  # camelCase: the field name the file uses

    def __post_init__(self) -> None:
        parse_scoring_strategy(self.scoringStrategy)

    def strategy(self) -> ScoringStrategy:
        return parse_scoring_strategy(self.scoringStrategy)


# ---- resource arithmetic (shared with ClusterResourcesBalancedAllocation) ------------------------


def _amount(name: str, value: Fraction) -> int:
    """The integer view of a quantity: millicores for CPU, whole units otherwise, rounded up."""
    return math.ceil(value * 1000) if name == CPU else math.ceil(value)


@dataclass(frozen=True, slots=True)
class Usage:
    """A cluster's resource summary as integers: allocatable and used (allocated + allocating)."""

    allocatable: Mapping[str, int]
    used: Mapping[str, int]

    def free(self, name: str) -> int:
        return self.allocatable.get(name, 0) - self.used.get(name, 0)


_EMPTY_USAGE = Usage({}, {})
_USAGE_MEMO = object()  # key of the Usage in ClusterInfo.memo (the value is immutable, like the cluster)


def usage_of(cluster: ClusterInfo) -> Usage:
    """The cluster's ``Usage``; a cluster without a resource summary has none of anything.

    Memoised on the cluster together with the summary it was computed from, so a copy of the
    cluster with another summary (``dataclasses.replace`` shares the memo dict) is not misread."""
    s = cluster.resource_summary
    found = cluster.memo.get(_USAGE_MEMO)
    if found is not None and found[0] is s:
        return found[1]  # type: ignore[no-any-return]
    if s is None:
        usage = _EMPTY_USAGE
    else:
        used: dict[str, Fraction] = {}
        for part in (s.allocated, s.allocating):
            for name, q in part.items():
                used[name] = used.get(name, Fraction(0)) + q.value_exact
        usage = Usage(
            {name: _amount(name, q.value_exact) for name, q in s.allocatable.items()},
            {name: _amount(name, v) for name, v in used.items()},
        )
    cluster.memo[_USAGE_MEMO] = (s, usage)
    return usage


def request_of(binding: SchedulingBinding) -> tuple[tuple[str, int], ...]:
    """The per-replica request as integers (positive amounts only), sorted by name."""
    rr = binding.replica_requirements
    if rr is None:
        return ()
    total: dict[str, Fraction] = {}
    for name, q in rr.resource_request:
        total[name] = total.get(name, Fraction(0)) + q.value_exact
    return tuple(sorted((n, a) for n, v in total.items() if (a := _amount(n, v)) > 0))


def fits_one_replica(usage: Usage, request: Sequence[tuple[str, int]]) -> bool:
    """True when every requested resource has at least the per-replica request free."""
    return all(usage.free(name) >= amount for name, amount in request)


def requested_and_capacity(
    usage: Usage, request: Mapping[str, int], resources: Sequence[ResourceSpec]
) -> list[tuple[int, int, int]]:
    """Per scored resource ``(requested after one more replica, allocatable, weight)``; extended
    resources the binding does not request are left out (kube's calculateResourceAllocatableRequest)."""
    out = []
    for spec in resources:
        amount = request.get(spec.name, 0)
        if amount == 0 and is_scalar_resource(spec.name):
            continue
        out.append((usage.used.get(spec.name, 0) + amount, usage.allocatable.get(spec.name, 0), spec.weight))
    return out


def normalize_min_max(scores: Sequence[int]) -> list[int]:
    """Min-max onto 0..100; all equal (or a single cluster) -> 100 for everyone."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if low == high:
        return [MAX_SCORE] * len(scores)
    return [(s - low) * MAX_SCORE // (high - low) for s in scores]


# ---- kube's scorers ------------------------------------------------------------------------------


def _go_div(a: int, b: int) -> int:
    """Go's integer division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def least_allocated(parts: Sequence[tuple[int, int, int]]) -> int:
    """kube's leastResourceScorer (a resource with 0 allocatable scores 0 and keeps its weight)."""
    total = weights = 0
    for requested, capacity, weight in parts:
        score = 0 if capacity == 0 or requested > capacity else (capacity - requested) * MAX_SCORE // capacity
        total += score * weight
        weights += weight
    return total // weights if weights else 0


def most_allocated(parts: Sequence[tuple[int, int, int]]) -> int:
    """kube's mostResourceScorer: requested capped at capacity (same weight rule as above)."""
    total = weights = 0
    for requested, capacity, weight in parts:
        score = 0 if capacity == 0 else min(requested, capacity) * MAX_SCORE // capacity
        total += score * weight
        weights += weight
    return total // weights if weights else 0


def broken_linear(shape: Sequence[ShapePoint], utilization: int) -> int:
    """kube's buildBrokenLinearFunction over a scaled shape."""
    for i, point in enumerate(shape):
        if utilization <= point.utilization:
            if i == 0:
                return shape[0].score
            prev = shape[i - 1]
            return prev.score + _go_div(
                (point.score - prev.score) * (utilization - prev.utilization),
                point.utilization - prev.utilization,
            )
    return shape[-1].score


def requested_to_capacity_ratio(shape: Sequence[ShapePoint], parts: Sequence[tuple[int, int, int]]) -> int:
    """kube's requestedToCapacityRatioScorer: only resources scoring above 0 count, rounded mean."""
    total = weights = 0
    for requested, capacity, weight in parts:
        if capacity == 0:
            continue  # not reported: contributes 0 (kube skips it too)
        utilization = MAX_UTILIZATION if requested > capacity else requested * MAX_UTILIZATION // capacity
        score = broken_linear(shape, utilization)
        if score > 0:
            total += score * weight
            weights += weight
    if not weights:
        return 0
    return (2 * total + weights) // (2 * weights)  # math.Round: half away from zero (all positive)


# ---- the plugin ----------------------------------------------------------------------------------


class ResourceScore:
    """What both resource scores share: they read the cluster's resource summary and the
    binding's per-replica request only (the declared inputs), score a cluster that cannot take one
    replica 0, and normalise min-max. A subclass says how ``parts`` (requested, capacity, weight per
    resource, after one more replica) become a raw score."""

    cluster_inputs: ClassVar[ClusterFacet] = ClusterFacet.RESOURCES

    def binding_key(self, ctx: FilterContext) -> Hashable:
        """Scores depend on the per-replica request only (not on the replica count)."""
        return request_of(ctx.binding)

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> int:
        """Raw score 0..100 of the cluster after one more replica; 0 when one does not fit."""
        return self._score(request_of(ctx.binding), cluster)

    def score_clusters(self, ctx: FilterContext, clusters: Sequence[ClusterInfo]) -> Sequence[int]:
        """The batch face: the same scores, the request converted once."""
        request = request_of(ctx.binding)
        return [self._score(request, c) for c in clusters]

    def normalize_score(
        self, ctx: FilterContext, clusters: Sequence[ClusterInfo], scores: Sequence[int]
    ) -> Sequence[int]:
        """Min-max onto 0..100; all-equal raw scores map to 100."""
        return normalize_min_max(scores)

    def _score(self, request: tuple[tuple[str, int], ...], cluster: ClusterInfo) -> int:
        usage = usage_of(cluster)
        if not fits_one_replica(usage, request):
            return 0
        return self.score_parts(usage, request)

    def score_parts(self, usage: Usage, request: tuple[tuple[str, int], ...]) -> int:
        raise NotImplementedError


class ClusterResourcesFit(ResourceScore):
    """Scores clusters by utilisation after one more replica, with a kube NodeResourcesFit strategy."""

    name = NAME
    args_model = ClusterResourcesFitArgs

    def __init__(self, strategy: ScoringStrategy | None = None) -> None:
        self.strategy = strategy or ScoringStrategy()

    def score_parts(self, usage: Usage, request: tuple[tuple[str, int], ...]) -> int:
        parts = requested_and_capacity(usage, dict(request), self.strategy.resources)
        kind = self.strategy.type
        if kind == MOST_ALLOCATED:
            return most_allocated(parts)
        if kind == REQUESTED_TO_CAPACITY_RATIO:
            return requested_to_capacity_ratio(self.strategy.shape, parts)
        return least_allocated(parts)


def new(args: ClusterResourcesFitArgs | None, handle: Handle | None) -> ClusterResourcesFit:
    """The registry's factory: ``args`` validated by the runtime into ``ClusterResourcesFitArgs``."""
    return ClusterResourcesFit((args or ClusterResourcesFitArgs()).strategy())
