"""Select stage: spread constraints choose the clusters that take part in assignment (Karmada's
pkg/scheduler/core/spreadconstraint).

Owns the global cluster order (§6.2), region groups and their scores (§6.3, §8.4), selection by
cluster (with the capacity swap) and by region (with the group combination search). Raises
``SchedulingError`` with Karmada's inner texts; the pipeline adds ``failed to select clusters: ``.
Pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fleetsched.scheduler.assign import ClusterDetail
from fleetsched.scheduler.errors import SchedulingError
from fleetsched.scheduler.types import (
    DIVIDED,
    SPREAD_BY_CLUSTER,
    SPREAD_BY_REGION,
    WEIGHTED,
    Placement,
    SchedulingBinding,
    SpreadConstraint,
)

__all__ = ["order_key", "select_clusters", "spread_ignored"]

_ZERO_CONSTRAINT = SpreadConstraint()


def order_key(c: ClusterDetail) -> tuple[int, int, int, str]:
    """(overflow tier asc, score desc, available desc, name asc): a total order (§6.2)."""
    return (c.overflow_order, -c.score, -c.available, c.name)


def spread_ignored(placement: Placement) -> bool:
    """Static weighting ignores spread constraints (§8.1)."""
    rs = placement.replica_scheduling
    if rs is None or rs.scheduling_type != DIVIDED or rs.division_preference != WEIGHTED:
        return False
    wp = rs.weight_preference
    return wp is None or (bool(wp.static_weight_list) and not wp.dynamic_weight)


def _select_by_cluster(sc: SpreadConstraint, clusters: list[ClusterDetail], need: int) -> list[ClusterDetail]:
    if len(clusters) < sc.min_groups:
        raise SchedulingError("the number of feasible clusters is less than spreadConstraint.MinGroups")
    k = min(len(clusters), sc.max_groups)
    if need == -1:
        return clusters[:k]
    ret, rest = clusters[:k], clusters[k:]
    i = k - 1
    while sum(c.available for c in ret) < need and i >= 0:
        best: int | None = None
        for j, c in enumerate(rest):
            if c.available > ret[i].available and (best is None or c.available > rest[best].available):
                best = j
        if best is not None:
            ret[i], rest[best] = rest[best], ret[i]
        i -= 1
    if sum(c.available for c in ret) < need or not ret:
        raise SchedulingError(f"no enough resource when selecting {k} clusters")
    return ret


@dataclass(slots=True)
class _Group:
    name: str
    clusters: list[ClusterDetail]
    score: int = 0


def _group_score(
    group: list[ClusterDetail], binding: SchedulingBinding, group_min_groups: int, cluster_min_groups: int
) -> int:
    placement = binding.placement
    if placement is None or placement.is_duplicated():
        valid = [c for c in group if c.available >= binding.replicas]
        if not valid:
            return 0
        return len(valid) * 1000 + sum(c.score for c in valid) // len(valid)
    # Go: int(math.Ceil(x / 0)) of +Inf/NaN is the minimum int64 on amd64; defaulting makes
    # minGroups >= 1, but bindings are taken as written.
    target = math.ceil(binding.replicas / group_min_groups) if group_min_groups else -(2**63)
    cmin = max(cluster_min_groups, group_min_groups)
    s_avail = s_score = n = 0
    for c in group:
        s_avail += c.available
        s_score += c.score
        n += 1
        if n >= cmin and s_avail >= target:
            break
    if s_avail < target:
        return _int64(s_avail * 1000 + s_score // len(group))
    return _int64(target * 1000 + s_score // n)


def _int64(n: int) -> int:
    n &= 0xFFFFFFFFFFFFFFFF
    return n - 2**64 if n >= 2**63 else n


def _select_groups(groups: list[_Group], min_g: int, max_g: int, target: int) -> list[_Group] | None:
    """The group combination Karmada's path search picks (§8.5.1), found without enumerating paths.

    Karmada's search (``pkg/scheduler/core/spreadconstraint``, spelled out in §8.5.1) records every
    combination of groups, taken in the order (clusters asc, score desc, name), whose first prefix to
    satisfy "clusters >= target and min <= groups <= max" is the combination itself, ranks the recorded
    paths by (weight desc, clusters desc, discovery order) and then walks the ranking replacing the best
    by any later path made of a strict prefix of the best's members. The number of paths is exponential
    (C(24, 10) ≈ 2M for the 24-region case of issue 14). Here the best path comes from a DP over
    (groups, groups taken, clusters taken capped at ``target``), O(groups² × target); discovery order
    is the lexicographic order of the index tuples, which the reconstruction honours by taking the
    earliest group it can. The prefix walk has at most one candidate per length. The literal search
    is kept as the reference of a differential test (tests/unit/scheduler/test_select_groups.py).
    """
    if not groups:
        return None
    order = sorted(groups, key=lambda g: (len(g.clusters), -g.score, g.name))
    values = [len(g.clusters) for g in order]  # a region exists only with a cluster: values >= 1
    weights = [g.score for g in order]

    def satisfied(taken: int, clusters: int) -> bool:
        return clusters >= target and min_g <= taken <= max_g

    def members(path: Sequence[int]) -> list[_Group]:
        return sorted((order[i] for i in path), key=lambda g: (-g.score, g.name))

    if satisfied(0, 0):
        return []  # the empty path satisfies at the root: it is the only path recorded
    # The search returns after its first child when len(groups) == minGroups, so it walks one chain of
    # prefixes; only all the groups can satisfy minGroups then, and they are on that chain: the
    # quirk changes how much is searched, not what is recorded.
    if target > sum(values):
        return None
    best = _best_path(values, weights, min_g=min_g, max_g=max_g, target=target)
    if best is None:
        return None

    def recorded(path: tuple[int, ...]) -> bool:  # indices ascending
        clusters = 0
        for j, i in enumerate(path):
            if satisfied(j, clusters):
                return False  # a shorter prefix satisfied first; the search never got here
            clusters += values[i]
        return satisfied(len(path), clusters)

    def rank(path: tuple[int, ...]) -> tuple[int, int, tuple[int, ...]]:
        return (-sum(weights[i] for i in path), -sum(values[i] for i in path), path)

    # The second pass of §8.5.1: later in the ranking, a strict prefix of the best's members wins.
    # Members are sorted by (score desc, name), so each length has exactly one candidate.
    while True:
        by_member = sorted(best, key=lambda i: (-weights[i], order[i].name))
        current = rank(best)
        following: tuple[int, int, tuple[int, ...]] | None = None
        for m in range(1, len(best)):
            candidate = tuple(sorted(by_member[:m]))
            if recorded(candidate):
                r = rank(candidate)
                if r > current and (following is None or r < following):
                    following = r
        if following is None:
            return members(best)
        best = following[2]


def _best_path(
    values: list[int], weights: list[int], *, min_g: int, max_g: int, target: int
) -> tuple[int, ...] | None:
    """The recorded path first in the ranking (weight desc, clusters desc, index tuple asc), or None.

    A non-empty index tuple ``A + (last,)`` is recorded when it satisfies and its longest proper
    prefix ``A`` does not (prefix cluster sums only grow): ``k = |A| + 1`` in [min, max],
    ``sum(A) + v[last] >= target`` and ``|A| < min or sum(A) < target``. So ``k <= max(min, target)``
    (every group has a cluster) and cluster sums matter only up to ``target``. ``table[i][c][s]`` is
    the best (weight, clusters), packed into one int, of finishing a path from group ``i`` on, with
    ``c`` groups taken so far and ``s`` clusters (capped). The empty path is handled by the caller.
    """
    n = len(values)
    cap_k = min(n, max_g, max(min_g, target))
    if cap_k < 1:
        return None
    cap_s = max(target, 0)
    scale = sum(values) + 1  # weight * scale + clusters orders like (weight, clusters)
    packed = [w * scale + v for w, v in zip(weights, values, strict=True)]

    def ends_at(c: int, s: int, v: int) -> bool:
        return min_g <= c + 1 <= max_g and s + v >= target and (c < min_g or s < target)

    none_row: list[int | None] = [None] * (cap_s + 1)
    table: list[list[list[int | None]]] = [[] for _ in range(n + 1)]
    table[n] = [none_row] * cap_k
    for i in range(n - 1, -1, -1):
        v, gain, after = values[i], packed[i], table[i + 1]
        layer: list[list[int | None]] = []
        for c in range(cap_k):
            skip, row = after[c], list(after[c])
            take = after[c + 1] if c + 1 < cap_k else None
            for s in range(cap_s + 1):
                best = skip[s]
                if ends_at(c, s, v) and (best is None or gain > best):
                    best = gain
                if take is not None:
                    rest = take[min(s + v, cap_s)]
                    if rest is not None and (best is None or gain + rest > best):
                        best = gain + rest
                row[s] = best
            layer.append(row)
        table[i] = layer
    goal = table[0][0][0]
    if goal is None:
        return None
    # Rebuild the lexicographically first tuple reaching the optimum: taking group i (ending here
    # before continuing) always sorts before any tuple that skips it.
    path: list[int] = []
    c = s = 0
    for i in range(n):
        v, gain = values[i], packed[i]
        if ends_at(c, s, v) and gain == goal:
            path.append(i)
            return tuple(path)
        if c + 1 < cap_k:
            rest = table[i + 1][c + 1][min(s + v, cap_s)]
            if rest is not None and gain + rest == goal:
                path.append(i)
                c, s, goal = c + 1, min(s + v, cap_s), rest
                continue
        # skipping keeps the optimum: table[i + 1][c][s] == goal
    raise AssertionError("group selection table and rebuild disagree")


def _select_by_region(
    constraints: dict[str, SpreadConstraint], clusters: list[ClusterDetail], binding: SchedulingBinding
) -> list[ClusterDetail]:
    rc = constraints[SPREAD_BY_REGION]
    cc = constraints.get(SPREAD_BY_CLUSTER, _ZERO_CONSTRAINT)
    regions: dict[str, _Group] = {}
    for c in clusters:  # global order, so each region lists its clusters in that order too
        if c.cluster.region:
            regions.setdefault(c.cluster.region, _Group(c.cluster.region, [])).clusters.append(c)
    cluster_min = constraints[SPREAD_BY_CLUSTER].min_groups if SPREAD_BY_CLUSTER in constraints else 0
    for g in regions.values():
        g.score = _group_score(g.clusters, binding, rc.min_groups, cluster_min)
    if len(regions) < rc.min_groups:
        raise SchedulingError("the number of feasible region is less than spreadConstraint.MinGroups")
    chosen = _select_groups(list(regions.values()), rc.min_groups, rc.max_groups, cc.min_groups)
    if not chosen:
        raise SchedulingError("the number of clusters is less than the cluster spreadConstraint.MinGroups")
    selected = [g.clusters[0] for g in chosen]
    rest = [c for g in chosen for c in g.clusters[1:]]
    k = min(len(rest) + len(selected), cc.max_groups)
    if k - len(selected) > 0:
        rest.sort(key=order_key)
        selected += rest[: k - len(selected)]
    return selected


def select_clusters(
    clusters: Sequence[ClusterDetail], binding: SchedulingBinding, *, multi_template: bool = False
) -> list[ClusterDetail]:
    """The select stage over feasible clusters already in global order (§8)."""
    placement = binding.placement
    assert placement is not None
    ordered = list(clusters)
    if not placement.spread_constraints or spread_ignored(placement):
        return ordered
    need = 1 if multi_template else binding.replicas
    if placement.is_duplicated():
        need = -1
    constraints: dict[str, SpreadConstraint] = {}
    for sc in placement.spread_constraints:
        if sc.spread_by_field:
            constraints[sc.spread_by_field] = sc
    if SPREAD_BY_REGION in constraints:
        return _select_by_region(constraints, ordered, binding)
    if SPREAD_BY_CLUSTER in constraints:
        return _select_by_cluster(constraints[SPREAD_BY_CLUSTER], ordered, need)
    raise SchedulingError("just support cluster and region spread constraint")
