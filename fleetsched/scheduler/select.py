"""Select stage: spread constraints choose the clusters that take part in assignment (scheduler.md §8).

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


@dataclass(slots=True)
class _Path:
    id: int
    groups: list[_Group]
    weight: int
    value: int


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
    if not groups:
        return None
    groups = sorted(groups, key=lambda g: (len(g.clusters), -g.score, g.name))
    paths: list[_Path] = []
    path: list[_Group] = []
    next_id = 1

    def dfs(total: int, begin: int) -> None:
        nonlocal next_id
        if total >= target and min_g <= len(path) <= max_g:
            members = sorted(path, key=lambda g: (-g.score, g.name))
            paths.append(
                _Path(next_id, members, sum(g.score for g in members), sum(len(g.clusters) for g in members))
            )
            next_id += 1
            return
        if len(path) >= max_g:
            return
        for i in range(begin, len(groups)):
            path.append(groups[i])
            dfs(total + len(groups[i].clusters), i + 1)
            if len(groups) == min_g:
                return
            path.pop()

    dfs(0, 0)
    if not paths:
        return None
    if len(paths) == 1:
        return paths[0].groups
    paths.sort(key=lambda p: (-p.weight, -p.value, p.id))
    best = paths[0]
    for p in paths[1:]:
        if len(p.groups) < len(best.groups) and all(
            best.groups[j].name == g.name for j, g in enumerate(p.groups)
        ):
            best = p
    return best.groups


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
