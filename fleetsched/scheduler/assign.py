"""Replica division: Duplicated, static weights, dynamic weights, Aggregated, overflow tiers (§9, §10).

Owns the Webster/Sainte-Laguë divisor with Karmada's FNV-1a UID tie-breaker, the Steady (scale
up / scale down / unchanged) and Fresh modes, and the per-tier overflow fill. Works on the
selected clusters as ``ClusterDetail`` records; raises ``AssignError`` / ``UnschedulableError``
with Karmada's texts. Pure.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from fleetsched.scheduler.errors import SchedulingError, UnschedulableError
from fleetsched.scheduler.matching import compile_affinity
from fleetsched.scheduler.types import (
    AGGREGATED,
    DIVIDED,
    DUPLICATED,
    WEIGHTED,
    ClusterInfo,
    SchedulingBinding,
    StaticWeightRule,
    TargetCluster,
)

__all__ = [
    "AGGREGATED_STRATEGY",
    "DUPLICATED_STRATEGY",
    "DYNAMIC_WEIGHT_STRATEGY",
    "STATIC_WEIGHT_STRATEGY",
    "ClusterDetail",
    "assign_replicas",
    "fnv1a_32",
    "strategy_of",
    "webster",
]

DUPLICATED_STRATEGY = "Duplicated"
AGGREGATED_STRATEGY = "Aggregated"
STATIC_WEIGHT_STRATEGY = "StaticWeight"
DYNAMIC_WEIGHT_STRATEGY = "DynamicWeight"
_SECOND = operator.itemgetter(1)


@dataclass(slots=True, init=False)
class ClusterDetail:
    """Karmada's ClusterDetailInfo: one feasible cluster with its numbers (§6.1)."""

    cluster: ClusterInfo
    score: int
    overflow_order: int
    allocatable: int  # int32 estimate of additional replicas
    available: int  # allocatable + replicas this binding already has there
    name: str  # the cluster's, kept here: every stage reads it per cluster

    def __init__(
        self, cluster: ClusterInfo, score: int, overflow_order: int, allocatable: int, available: int
    ) -> None:
        self.cluster = cluster
        self.score = score
        self.overflow_order = overflow_order
        self.allocatable = allocatable
        self.available = available
        self.name = cluster.name


def fnv1a_32(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


class _Desc(str):
    """A name that sorts in reverse, for the odd-hash tie-breaker inside a min-heap."""

    __slots__ = ()

    def __lt__(self, other: str) -> bool:  # type: ignore[override]
        return str.__gt__(self, other)


def webster(seats: int, votes: Mapping[str, int], *, uid: str = "") -> dict[str, int]:
    """Sainte-Laguë division of ``seats`` by ``votes``; ties: fewer seats, then name (§9.2).

    Returns every party (0-seat ones too) in name order.
    """
    result = dict.fromkeys(sorted(votes), 0)
    result.update(_webster_winners(seats, votes, uid=uid))
    return result


def _webster_winners(seats: int, votes: Mapping[str, int], *, uid: str = "") -> dict[str, int]:
    """``webster``'s parties with at least one seat, in name order.

    Only parties among the ``seats`` largest votes (ties at the boundary included) can win a seat:
    each of those has a first quotient (its votes) above any smaller party's best quotient, so the
    smaller one is never popped before ``seats`` seats are gone. A party with votes <= 0 never wins
    while a positive one exists (a positive party's quotient stays above 0). The heap then holds
    those candidates only and pops exactly as it would over every party (the literal division is
    ``_webster_reference`` in tests/unit/scheduler/test_assign_webster.py)."""
    if seats <= 0 or sum(votes.values()) == 0:
        return {}
    positive = [v for v in votes.values() if v > 0]
    if not positive:
        candidates: list[str] = sorted(votes)  # only non-positive votes: the literal division
    elif len(positive) <= seats:
        candidates = sorted(n for n, v in votes.items() if v > 0)
    else:
        threshold = heapq.nlargest(seats, positive)[-1]
        candidates = sorted(n for n, v in votes.items() if v >= threshold)
    desc = uid != "" and (fnv1a_32(uid.encode()) & 1) == 1
    # The next seat goes to the highest votes/(2*seats+1); the heap holds (-priority, seats, name).
    heap: list[tuple[float, int, str]] = [
        (-(float(votes[n]) / 1.0), 0, _Desc(n) if desc else n) for n in candidates
    ]
    heapq.heapify(heap)
    won: dict[str, int] = {}
    for _ in range(seats):
        _p, s, n = heapq.heappop(heap)
        s += 1
        won[str(n)] = s
        heapq.heappush(heap, (-(float(votes[str(n)]) / float(2 * s + 1)), s, n))
    return {n: won[n] for n in candidates if n in won}


def strategy_of(binding: SchedulingBinding) -> str | None:
    """§4.5 strategy classification; ``None`` = unsupported."""
    placement = binding.placement
    rs = placement.replica_scheduling if placement is not None else None
    if rs is None or rs.scheduling_type == DUPLICATED:
        return DUPLICATED_STRATEGY
    if rs.scheduling_type == DIVIDED:
        if rs.division_preference == AGGREGATED:
            return AGGREGATED_STRATEGY
        if rs.division_preference == WEIGHTED:
            wp = rs.weight_preference
            if wp is not None and wp.dynamic_weight != "":
                return DYNAMIC_WEIGHT_STRATEGY
            return STATIC_WEIGHT_STRATEGY
    return None


def _int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - 2**32 if n >= 2**31 else n


def _int32_sum(values: Iterable[int]) -> int:
    return _int32(sum(values))


def _stable_sort_desc(items: list[tuple[str, int]]) -> list[tuple[str, int]]:
    # Go's sort.Sort is an insertion sort (stable) up to 12 elements; the recorded cases are all
    # reproduced by a stable sort. ``reverse`` keeps equal items in order.
    return sorted(items, key=_SECOND, reverse=True)


def _drop_zeros(targets: Iterable[TargetCluster]) -> list[TargetCluster]:
    return [t for t in targets if t.replicas > 0]


def _merge(old: list[TargetCluster], new: list[TargetCluster]) -> list[TargetCluster]:
    if not old:
        return new
    if not new:
        return old
    leftover = {t.name: t.replicas for t in old}
    out = [TargetCluster(t.name, t.replicas + leftover.pop(t.name, 0)) for t in new]
    # Karmada appends leftovers in Go map order (random, §13 item 2); we keep spec.clusters order.
    out += [TargetCluster(t.name, t.replicas) for t in old if t.name in leftover]
    return out


def _divide(
    *, strategy: str, target: int, avail: list[tuple[str, int]], prior: list[TargetCluster], uid: str
) -> list[TargetCluster]:
    total = _int32_sum(r for _, r in avail)
    if total < target:
        raise UnschedulableError(f"Clusters available replicas {total} are not enough to schedule.")
    if strategy == AGGREGATED_STRATEGY:
        keep = {t.name for t in prior if t.replicas > 0}
        if keep:
            avail = [a for a in avail if a[0] in keep] + [a for a in avail if a[0] not in keep]
        acc = 0
        for i, (_n, r) in enumerate(avail):
            acc += r
            if acc >= target:
                avail = avail[: i + 1]
                break
    votes = dict(avail)
    won = _webster_winners(target, votes, uid=uid)
    # Zero-seat parties only matter when they hold replicas already (merge keeps their place), in
    # name order among the winners.
    held = {t.name for t in prior if t.name in votes and t.name not in won}
    if held:
        won = {n: won.get(n, 0) for n in sorted([*won, *held])}
    new = [TargetCluster(n, r) for n, r in won.items()]
    return _merge(prior, new)


def _dynamic(
    selected: Sequence[ClusterDetail],
    binding: SchedulingBinding,
    replicas: int,
    *,
    strategy: str,
    fresh: bool,
) -> list[TargetCluster]:
    uid = binding.resource.uid
    candidates = {c.name for c in selected}
    scheduled = [t for t in binding.clusters if t.name in candidates]
    if fresh:
        held = {}
        for t in scheduled:
            held.setdefault(t.name, t.replicas)
        # Free + held is an int32 sum per cluster in Karmada (it wraps, §13).
        avail = [(c.name, _int32(c.allocatable + held.get(c.name, 0))) for c in selected]
        try:
            return _divide(
                strategy=strategy, target=replicas, avail=_stable_sort_desc(avail), prior=[], uid=uid
            )
        except UnschedulableError as e:
            raise UnschedulableError(f"failed to do fresh scale: {e}") from None
    assigned = _int32_sum(t.replicas for t in scheduled)
    if assigned > replicas:
        avail = _stable_sort_desc([(t.name, t.replicas) for t in scheduled])
        try:
            return _divide(strategy=strategy, target=replicas, avail=avail, prior=[], uid=uid)
        except UnschedulableError as e:
            raise UnschedulableError(f"failed to scale down: {e}") from None
    if assigned < replicas:
        avail = _stable_sort_desc([(c.name, c.allocatable) for c in selected])
        try:
            return _divide(
                strategy=strategy, target=_int32(replicas - assigned), avail=avail, prior=scheduled, uid=uid
            )
        except UnschedulableError as e:
            raise UnschedulableError(f"failed to scale up: {e}") from None
    return scheduled


def _static(
    selected: Sequence[ClusterDetail], binding: SchedulingBinding, replicas: int
) -> list[TargetCluster]:
    placement = binding.placement
    rs = placement.replica_scheduling if placement is not None else None
    prefs = rs.weight_preference if rs is not None else None
    weights: dict[str, int] = {}
    if prefs is None:
        weights = {c.name: 1 for c in selected}
    else:
        weights = _static_weights(selected, prefs.static_weight_list)
    if sum(weights.values()) == 0:
        # Nothing matched: "divide evenly".
        weights = {c.name: 1 for c in selected}
    # Zero-seat parties are dropped by every caller (``_drop_zeros``).
    seats = _webster_winners(replicas, weights, uid=binding.resource.uid)
    return [TargetCluster(n, r) for n, r in seats.items()]


def _static_weights(selected: Sequence[ClusterDetail], rules: Sequence[StaticWeightRule]) -> dict[str, int]:
    """Per selected cluster name, the largest weight of the rules it matches, where positive.

    A rule naming clusters only (no selector) matches exactly its names less the excluded ones, so
    its clusters are found by name instead of by asking every cluster; other rules ask each. With
    two selected clusters of one name, each is asked, as the literal loop did (the later wins)."""
    names = [c.name for c in selected]
    weights: dict[str, int] = {}
    if len(set(names)) != len(names):
        compiled = [(r.weight, compile_affinity(r.target)) for r in rules]
        for c in selected:
            w = max((weight for weight, matches in compiled if matches(c.cluster)), default=0)
            if w > 0:
                weights[c.name] = w
        return weights
    by_name = {c.name: c for c in selected}
    for rule in rules:
        if rule.weight <= 0:
            continue  # a match can only lift a weight above 0
        target = rule.target
        if target.label_selector is None and target.field_selector is None and target.cluster_names:
            excluded = set(target.exclude)
            matched = [n for n in target.cluster_names if n in by_name and n not in excluded]
        else:
            matches = compile_affinity(target)
            matched = [n for n in names if matches(by_name[n].cluster)]
        for n in matched:
            if rule.weight > weights.get(n, 0):
                weights[n] = rule.weight
    return weights


def _run_strategy(
    strategy: str,
    selected: Sequence[ClusterDetail],
    binding: SchedulingBinding,
    replicas: int,
    *,
    fresh: bool,
) -> list[TargetCluster]:
    if strategy == DUPLICATED_STRATEGY:
        return [TargetCluster(c.name, replicas) for c in selected]
    if strategy == STATIC_WEIGHT_STRATEGY:
        return _static(selected, binding, replicas)
    return _dynamic(selected, binding, replicas, strategy=strategy, fresh=fresh)


def _unsupported(binding: SchedulingBinding) -> SchedulingError:
    rs = binding.placement.replica_scheduling if binding.placement is not None else None
    t = rs.scheduling_type if rs is not None else ""
    p = rs.division_preference if rs is not None else ""
    return SchedulingError(
        f"unsupported replica scheduling strategy, replicaSchedulingType: {t}, "
        f"replicaDivisionPreference: {p}, please try another scheduling strategy"
    )


def _assign_overflow(
    strategy: str, selected: Sequence[ClusterDetail], binding: SchedulingBinding, *, fresh: bool
) -> list[TargetCluster]:
    tiers: dict[int, list[ClusterDetail]] = {}
    for c in selected:
        tiers.setdefault(c.overflow_order, []).append(c)
    remaining = binding.replicas
    out: list[TargetCluster] = []
    for t in sorted(tiers):
        members = tiers[t]
        want = min(remaining, sum(c.available for c in members))
        out += _drop_zeros(_run_strategy(strategy, members, binding, want, fresh=fresh))
        remaining -= want
        if remaining <= 0:
            break
    if remaining > 0:
        raise UnschedulableError("Clusters available replicas are not enough to schedule.")
    return out


def assign_replicas(
    selected: Sequence[ClusterDetail],
    binding: SchedulingBinding,
    *,
    fresh: bool,
    overflow: bool,
    empty_workload_propagation: bool = False,
    multi_template: bool = False,
) -> list[TargetCluster]:
    """Karmada's assignReplicas (§9.1): the new spec.clusters for the selected clusters.

    Errors carry the inner text only; the pipeline prefixes ``failed to assign replicas: ``.
    """
    if not selected:
        raise SchedulingError("no clusters available to schedule")
    if (binding.replicas > 0 or binding.replica_requirements is not None) and len(binding.components) <= 1:
        strategy = strategy_of(binding)
        if strategy is None:
            raise _unsupported(binding)
        if overflow:
            result = _assign_overflow(strategy, selected, binding, fresh=fresh)
        else:
            result = _drop_zeros(_run_strategy(strategy, selected, binding, binding.replicas, fresh=fresh))
    else:
        # Non-workloads and multi-component workloads: every selected cluster, no replica count;
        # multi-template results carry the components as they are (§12).
        components = tuple((c.name, c.replicas) for c in binding.components) if multi_template else ()
        return [TargetCluster(c.name, 0, components) for c in selected]
    if empty_workload_propagation:
        present = {t.name for t in result}
        result += [TargetCluster(c.name, 0) for c in selected if c.name not in present]
    return result
