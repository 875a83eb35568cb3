"""scheduler.md's pseudo-code transcribed as literally as Python allows, plus a generator of inputs.

Used by the differential test in ``test_spec_audit.py``: the scheduling core (memoised filters,
heap-based Webster, closed-form estimates, ...) must decide exactly what this slow, obvious reading of
§4-§10 decides. Only ``ClusterMatches``/``ToleratesTaint`` (§5.3, §5.4, pinned by their own table
tests) and the input conversion are shared with the code under test.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from fleetsched.scheduler.general_estimator import is_scalar_resource
from fleetsched.scheduler.matching import cluster_matches, tolerates
from fleetsched.scheduler.types import (
    AffinityTerm,
    BindingStatus,
    ClusterAffinity,
    ClusterInfo,
    Placement,
    ReplicaRequirements,
    SchedulingBinding,
    SpreadConstraint,
)

MAX_INT32 = 2**31 - 1
Targets = list[tuple[str, int]]


def value(x: Fraction) -> int:
    """Quantity.Value(): ceil, away from zero (estimator.md §2.5)."""
    return math.ceil(x) if x >= 0 else math.floor(x)


def int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - 2**32 if n >= 2**31 else n


def int64(n: int) -> int:
    n &= 0xFFFFFFFFFFFFFFFF
    return n - 2**64 if n >= 2**63 else n


class Failure(Exception):
    def __init__(self, reason: str, message: str, *, fit: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.fit = fit

    def wrapped(self, prefix: str) -> Failure:
        return Failure(self.reason, f"{prefix}: {self.message}", fit=self.fit)


# ---- §9.2 ---------------------------------------------------------------------------------------------


def fnv1a_32(text: str) -> int:
    h = 0x811C9DC5
    for b in text.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def webster(seats: int, votes: dict[str, int], uid: str) -> Targets:
    parties = {n: [v, 0] for n, v in votes.items()}  # [votes, seats]
    if sum(votes.values()) == 0:
        return []
    desc = uid != "" and fnv1a_32(uid) & 1 == 1

    def better(a: str, b: str) -> bool:
        pa = float(parties[a][0]) / float(2 * parties[a][1] + 1)
        pb = float(parties[b][0]) / float(2 * parties[b][1] + 1)
        if pa != pb:
            return pa > pb
        if parties[a][1] != parties[b][1]:
            return parties[a][1] < parties[b][1]
        return a > b if desc else a < b

    for _ in range(seats):
        best: str | None = None
        for n in parties:
            if best is None or better(n, best):
                best = n
        assert best is not None
        parties[best][1] += 1
    return [(n, parties[n][1]) for n in sorted(parties)]


# ---- §7.2, §7.3 ---------------------------------------------------------------------------------------


def general_estimate(cluster: ClusterInfo, req: ReplicaRequirements | None, modeling: bool) -> int:
    s = cluster.resource_summary
    if s is None:
        return 0

    def amount(m: Any, name: str) -> Fraction:
        q = m.get(name)
        return q.value_exact if q is not None else Fraction(0)

    pods = (
        value(amount(s.allocatable, "pods"))
        - value(amount(s.allocated, "pods"))
        - value(amount(s.allocating, "pods"))
    )
    if pods <= 0:
        return 0
    if req is None:
        return int32(pods)
    request = {n: q.value_exact for n, q in req.resource_request}
    if modeling and s.allocatable_modelings:
        m = model_estimate(cluster, request)
        if m is not None:
            return int32(min(m, MAX_INT32, pods))
    best: int | None = None
    for name, q in request.items():
        r = value(q)
        if r <= 0:
            continue
        if name not in s.allocatable:
            return 0
        avail = amount(s.allocatable, name) - amount(s.allocated, name) - amount(s.allocating, name)
        if value(avail) <= 0:
            return 0
        if name == "cpu":
            r, a = value(q * 1000), value(avail * 1000)
        else:
            a = value(avail)
        best = a // r if best is None else min(best, a // r)
    return int32(pods if best is None else min(pods, best))


def model_estimate(cluster: ClusterInfo, request: dict[str, Fraction]) -> int | None:
    if not cluster.resource_models:
        return None
    assert cluster.resource_summary is not None
    count: dict[int, int] = defaultdict(int)
    for grade, n in cluster.resource_summary.allocatable_modelings:
        if n < 0:
            return None
        count[grade] += n
    total = 0
    for model in sorted(cluster.resource_models, key=lambda m: m.grade):
        cap: dict[str, Fraction] = {name: low.value_exact for name, low, _high in model.ranges}
        fit = 110
        for name, q in request.items():
            if not (name in ("cpu", "memory", "ephemeral-storage") or is_scalar_resource(name)):
                continue
            need = value(q * 1000) if name == "cpu" else value(q)
            if need <= 0:
                continue
            c = cap.get(name, Fraction(0))
            have = value(c * 1000) if name == "cpu" else value(c)
            fit = min(fit, have // need)
        total += count[model.grade] * fit
    return total


# ---- §5 filters ----------------------------------------------------------------------------------------


def is_workload(b: SchedulingBinding) -> bool:
    return b.replicas > 0 or b.replica_requirements is not None or len(b.components) >= 1


def placement_of(b: SchedulingBinding) -> Placement:
    assert b.placement is not None
    return b.placement


def affinities(b: SchedulingBinding, observed: str) -> list[ClusterAffinity]:
    p = placement_of(b)
    if p.cluster_affinity is not None:
        return [p.cluster_affinity]
    for t in p.cluster_affinities or ():
        if t.name == observed:
            found = [t.affinity]
            if is_workload(b) and t.overflow:
                found += [o.affinity for o in t.overflow]
            return found
    return []


def first_rejection(b: SchedulingBinding, observed: str, c: ClusterInfo) -> str | None:
    targets = {t.name for t in b.clusters}
    p = placement_of(b)
    if c.name not in targets and (b.resource.api_version, b.resource.kind) not in c.api_enablements:
        return "cluster(s) did not have the API resource"
    if c.name not in targets:
        for taint in c.taints:
            if taint.effect in ("NoSchedule", "NoExecute") and not any(
                tolerates(t, taint) for t in p.cluster_tolerations
            ):
                return f"cluster(s) had untolerated taint {{{taint.render()}}}"
    found = affinities(b, observed)
    if found and not any(cluster_matches(c, a) for a in found):
        return "cluster(s) did not match the placement cluster affinity constraint"
    for sc in p.spread_constraints:
        if sc.spread_by_field == "provider" and not c.provider:
            return "cluster(s) did not have provider property"
        if sc.spread_by_field == "region" and not c.region:
            return "cluster(s) did not have region property"
        if sc.spread_by_field == "zone" and not c.zones:
            return "cluster(s) did not have zones property"
    if c.name in b.evicting_clusters:
        return "cluster(s) is in the process of eviction"
    return None


# ---- §4.5, §6, §8 ------------------------------------------------------------------------------------


def strategy(b: SchedulingBinding) -> str | None:
    rs = placement_of(b).replica_scheduling
    if rs is None or rs.scheduling_type == "Duplicated":
        return "Duplicated"
    if rs.scheduling_type == "Divided":
        if rs.division_preference == "Aggregated":
            return "Aggregated"
        if rs.division_preference == "Weighted":
            wp = rs.weight_preference
            return "DynamicWeight" if wp is not None and wp.dynamic_weight != "" else "StaticWeight"
    return None


@dataclass
class Detail:
    cluster: ClusterInfo
    score: int
    order: int
    allocatable: int
    available: int

    @property
    def name(self) -> str:
        return self.cluster.name


def sort_key(d: Detail) -> tuple[int, int, int, str]:
    return (d.order, -d.score, -d.available, d.name)


def spread_ignored(p: Placement) -> bool:
    rs = p.replica_scheduling
    return (
        rs is not None
        and rs.scheduling_type == "Divided"
        and rs.division_preference == "Weighted"
        and (
            rs.weight_preference is None
            or (bool(rs.weight_preference.static_weight_list) and not rs.weight_preference.dynamic_weight)
        )
    )


def select(b: SchedulingBinding, details: list[Detail]) -> list[Detail]:
    p = placement_of(b)
    if not p.spread_constraints or spread_ignored(p):
        return details
    need = -1 if p.is_duplicated() else b.replicas
    constraints: dict[str, SpreadConstraint] = {}
    for sc in p.spread_constraints:
        if sc.spread_by_field:
            constraints[sc.spread_by_field] = sc
    if "region" in constraints:
        return select_by_region(b, constraints, details)
    if "cluster" in constraints:
        return select_by_cluster(constraints["cluster"], details, need)
    raise Failure("SchedulerError", "just support cluster and region spread constraint")


def select_by_cluster(sc: SpreadConstraint, clusters: list[Detail], need: int) -> list[Detail]:
    if len(clusters) < sc.min_groups:
        raise Failure(
            "SchedulerError", "the number of feasible clusters is less than spreadConstraint.MinGroups"
        )
    k = min(len(clusters), sc.max_groups)
    if need == -1:
        return clusters[:k]
    ret, rest = list(clusters[:k]), list(clusters[k:])
    i = k - 1
    while sum(c.available for c in ret) < need and i >= 0:
        j: int | None = None
        for index, c in enumerate(rest):
            if c.available > ret[i].available and (j is None or c.available > rest[j].available):
                j = index
        if j is not None:
            ret[i], rest[j] = rest[j], ret[i]
        i -= 1
    if sum(c.available for c in ret) < need or not ret:
        raise Failure("SchedulerError", f"no enough resource when selecting {k} clusters")
    return ret


def group_score(clusters: list[Detail], b: SchedulingBinding, group_min: int, cluster_min: int) -> int:
    if placement_of(b).is_duplicated():
        valid = [c for c in clusters if c.available >= b.replicas]
        return 0 if not valid else len(valid) * 1000 + sum(c.score for c in valid) // len(valid)
    # ceil(x / 0) is +Inf (or NaN), which Go turns into the minimum int64.
    target = math.ceil(b.replicas / group_min) if group_min else -(2**63)
    cmin = max(cluster_min, group_min)
    s_avail = s_score = n = 0
    for c in clusters:
        s_avail += c.available
        s_score += c.score
        n += 1
        if n >= cmin and s_avail >= target:
            break
    if s_avail < target:
        return int64(s_avail * 1000 + s_score // len(clusters))
    return int64(target * 1000 + s_score // n)


Group = tuple[str, int, int]  # name, value (clusters), weight (score)


def select_by_region(
    b: SchedulingBinding, constraints: dict[str, SpreadConstraint], details: list[Detail]
) -> list[Detail]:
    rc = constraints["region"]
    cc = constraints.get("cluster", SpreadConstraint())
    regions: dict[str, list[Detail]] = {}
    for d in details:
        if d.cluster.region:
            regions.setdefault(d.cluster.region, []).append(d)
    if len(regions) < rc.min_groups:
        raise Failure(
            "SchedulerError", "the number of feasible region is less than spreadConstraint.MinGroups"
        )
    groups = [(n, len(cs), group_score(cs, b, rc.min_groups, cc.min_groups)) for n, cs in regions.items()]
    chosen = select_groups(groups, rc.min_groups, rc.max_groups, cc.min_groups)
    if not chosen:
        raise Failure(
            "SchedulerError", "the number of clusters is less than the cluster spreadConstraint.MinGroups"
        )
    selected = [regions[g][0] for g in chosen]
    rest = [c for g in chosen for c in regions[g][1:]]
    k = min(len(rest) + len(selected), cc.max_groups)
    if k - len(selected) > 0:
        rest.sort(key=sort_key)
        selected += rest[: k - len(selected)]
    return selected


def select_groups(groups: list[Group], min_g: int, max_g: int, target: int) -> list[str] | None:
    if not groups:
        return None
    groups = sorted(groups, key=lambda g: (g[1], -g[2], g[0]))
    paths: list[tuple[int, list[Group], int, int]] = []  # id, groups, weight, value
    path: list[Group] = []

    def dfs(total: int, begin: int) -> None:
        if total >= target and min_g <= len(path) <= max_g:
            members = sorted(path, key=lambda g: (-g[2], g[0]))
            paths.append((len(paths) + 1, members, sum(g[2] for g in members), sum(g[1] for g in members)))
            return
        if len(path) >= max_g:
            return
        for i in range(begin, len(groups)):
            path.append(groups[i])
            dfs(total + groups[i][1], i + 1)
            if len(groups) == min_g:
                return
            path.pop()

    dfs(0, 0)
    if not paths:
        return None
    if len(paths) == 1:
        return [g[0] for g in paths[0][1]]
    paths.sort(key=lambda p: (-p[2], -p[3], p[0]))
    best = paths[0]
    for p in paths[1:]:
        if len(p[1]) < len(best[1]) and all(best[1][j][0] == g[0] for j, g in enumerate(p[1])):
            best = p
    return [g[0] for g in best[1]]


# ---- §9, §10 -----------------------------------------------------------------------------------------


def merge(old: Targets, new: Targets) -> Targets:
    if not old:
        return new
    if not new:
        return old
    leftover = dict(old)
    out = [(n, r + leftover.pop(n, 0)) for n, r in new]
    # Go map order is random here (§13 item 2); the spec.clusters order is our pick.
    return out + [(n, r) for n, r in old if n in leftover]


def divide(kind: str, target: int, avail: Targets, prior: Targets, uid: str) -> Targets:
    total = int32(sum(r for _, r in avail))
    if total < target:
        raise Failure("Unschedulable", f"Clusters available replicas {total} are not enough to schedule.")
    if kind == "Aggregated":
        keep = [n for n, r in prior if r > 0]
        if keep:
            avail = [a for a in avail if a[0] in keep] + [a for a in avail if a[0] not in keep]
        acc = 0
        for i, (_n, r) in enumerate(avail):
            acc += r
            if acc >= target:
                avail = avail[: i + 1]
                break
    return merge(prior, webster(target, dict(avail), uid))


def stable_sort_desc(items: Targets) -> Targets:
    return sorted(items, key=lambda item: -item[1])


def run_strategy(
    kind: str, selected: list[Detail], b: SchedulingBinding, replicas: int, fresh: bool
) -> Targets:
    uid = b.resource.uid
    if kind == "Duplicated":
        return [(c.name, replicas) for c in selected]
    if kind == "StaticWeight":
        rs = placement_of(b).replica_scheduling
        assert rs is not None
        prefs = rs.weight_preference
        weights = {}
        for c in selected:
            if prefs is None:
                w = 1
            else:
                w = max(
                    (r.weight for r in prefs.static_weight_list if cluster_matches(c.cluster, r.target)),
                    default=0,
                )
            if w > 0:
                weights[c.name] = w
        if sum(weights.values()) == 0:
            weights = {c.name: 1 for c in selected}
        return webster(replicas, weights, uid)
    candidates = {c.name for c in selected}
    scheduled = [(t.name, t.replicas) for t in b.clusters if t.name in candidates]
    assigned = int32(sum(r for _, r in scheduled))
    if fresh:
        held: dict[str, int] = {}
        for n, r in scheduled:
            held.setdefault(n, r)
        avail = stable_sort_desc([(c.name, int32(c.allocatable + held.get(c.name, 0))) for c in selected])
        try:
            return divide(kind, replicas, avail, [], uid)
        except Failure as e:
            raise e.wrapped("failed to do fresh scale") from None
    if assigned > replicas:
        try:
            return divide(kind, replicas, stable_sort_desc(scheduled), [], uid)
        except Failure as e:
            raise e.wrapped("failed to scale down") from None
    if assigned < replicas:
        avail = stable_sort_desc([(c.name, c.allocatable) for c in selected])
        try:
            return divide(kind, int32(replicas - assigned), avail, scheduled, uid)
        except Failure as e:
            raise e.wrapped("failed to scale up") from None
    return scheduled


def assign(
    b: SchedulingBinding, selected: list[Detail], fresh: bool, overflow: bool, propagate: bool
) -> Targets:
    if not selected:
        raise Failure("SchedulerError", "no clusters available to schedule")
    if not ((b.replicas > 0 or b.replica_requirements is not None) and len(b.components) <= 1):
        return [(c.name, 0) for c in selected]
    kind = strategy(b)
    if kind is None:
        rs = placement_of(b).replica_scheduling
        t, p = (rs.scheduling_type, rs.division_preference) if rs is not None else ("", "")
        raise Failure(
            "SchedulerError",
            f"unsupported replica scheduling strategy, replicaSchedulingType: {t}, "
            f"replicaDivisionPreference: {p}, please try another scheduling strategy",
        )
    if overflow:
        tiers: dict[int, list[Detail]] = {}
        for c in selected:
            tiers.setdefault(c.order, []).append(c)
        remaining, result = b.replicas, []
        for t in range(max(tiers) + 1):
            if t not in tiers:
                continue
            want = min(remaining, sum(c.available for c in tiers[t]))
            result += [(n, r) for n, r in run_strategy(kind, tiers[t], b, want, fresh) if r > 0]
            remaining -= want
            if remaining <= 0:
                break
        if remaining > 0:
            raise Failure("Unschedulable", "Clusters available replicas are not enough to schedule.")
    else:
        result = [(n, r) for n, r in run_strategy(kind, selected, b, b.replicas, fresh) if r > 0]
    if propagate:
        present = {n for n, _ in result}
        result += [(c.name, 0) for c in selected if c.name not in present]
    return result


def overflow_term(b: SchedulingBinding, observed: str) -> AffinityTerm | None:
    p = placement_of(b)
    if p.cluster_affinity is not None or p.cluster_affinities is None or not observed:
        return None
    for t in p.cluster_affinities:
        if t.name == observed:
            return t if t.overflow is not None else None
    return None


def algorithm(
    b: SchedulingBinding,
    observed: str,
    fresh: bool,
    clusters: Sequence[ClusterInfo],
    propagate: bool,
    modeling: bool,
) -> Targets:
    feasible = [c for c in clusters if not c.deleting and first_rejection(b, observed, c) is None]
    if not feasible:
        raise Failure("NoClusterFit", "0/N clusters are available", fit=True)
    targets = {t.name for t in b.clusters}
    allocatable = {c.name: MAX_INT32 for c in feasible}
    if not (b.replicas == 0 and not b.components):
        for c in feasible:
            allocatable[c.name] = min(
                allocatable[c.name], general_estimate(c, b.replica_requirements, modeling)
            )
        for n, v in allocatable.items():
            if v == MAX_INT32:
                allocatable[n] = b.replicas
    held: dict[str, int] = {}
    for t in b.clusters:
        held.setdefault(t.name, t.replicas)
    term = overflow_term(b, observed)

    def tier(c: ClusterInfo) -> int:
        if term is None or cluster_matches(c, term.affinity):
            return 0
        assert term.overflow is not None
        for i, o in enumerate(term.overflow):
            if cluster_matches(c, o.affinity):
                return i + 1
        return 1000

    details = sorted(
        (
            Detail(
                c,
                100 if c.name in targets else 0,
                tier(c),
                allocatable[c.name],
                allocatable[c.name] + held.get(c.name, 0),
            )
            for c in feasible
        ),
        key=sort_key,
    )
    try:
        selected = select(b, details)
    except Failure as e:
        raise e.wrapped("failed to select clusters") from None
    try:
        return assign(b, selected, fresh, term is not None, propagate)
    except Failure as e:
        raise e.wrapped("failed to assign replicas") from None


Outcome = tuple[str | None, Targets | None, str | None]  # reason, new spec.clusters, observed name


def schedule(
    b: SchedulingBinding,
    status: BindingStatus,
    clusters: Sequence[ClusterInfo],
    *,
    propagate: bool,
    modeling: bool,
) -> Outcome:
    """§3.5-§3.7: (condition reason, spec.clusters or None = untouched, affinity name or None = untouched)."""
    if b.placement is None:
        return (None, None, None)
    trigger, last = b.reschedule_triggered_at, status.last_scheduled_time
    fresh = trigger is not None and last is not None and trigger > last
    terms = b.placement.cluster_affinities
    if terms is None:
        try:
            result = algorithm(
                b, status.scheduler_observing_affinity_name, fresh, clusters, propagate, modeling
            )
        except Failure as e:
            return (e.reason, [] if e.fit else None, None)
        return ("Success", result, None)
    start = 0
    name = status.scheduler_observing_affinity_name
    for i, t in enumerate(terms):
        if name and t.name == name:
            start = i
            break
    if fresh:
        start = 0
    first: Failure | None = None
    for i in range(start, len(terms)):
        try:
            return (
                "Success",
                algorithm(b, terms[i].name, fresh, clusters, propagate, modeling),
                terms[i].name,
            )
        except Failure as e:
            first = first or e
    if first is None:
        return ("Success", None, None)
    return (first.reason, [] if first.fit else None, None)


# ---- inputs shaped like the recorded random cases ----------------------------------------------------

_APIS = [
    {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]},
    {"groupVersion": "v1", "resources": [{"name": "configmaps", "kind": "ConfigMap"}]},
]
_MODELS = [
    {
        "grade": g,
        "ranges": [
            {"name": "cpu", "min": str(lo), "max": str(hi)},
            {"name": "memory", "min": f"{m}Gi", "max": f"{m2}Gi"},
        ],
    }
    for g, (lo, hi, m, m2) in enumerate([(0, 1, 0, 4), (1, 2, 4, 8), (2, 4, 8, 16), (4, 8, 16, 32)])
]


class Generator:
    """Random Clusters and ResourceBindings over the recorded cases' features, plus edge values."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        # Small, round numbers make ties and exact sums (the interesting boundaries) likely.
        self.small = False

    def fleet(self) -> list[dict[str, Any]]:
        self.small = self.r.random() < 0.5
        return [self.cluster(i) for i in range(self.r.randint(1, 14))]

    def cluster(self, i: int) -> dict[str, Any]:
        r = self.r
        labels = {"env": r.choice(["prod", "dev"]), "tier": r.choice(["gold", "silver"])}
        c: dict[str, Any] = {
            "kind": "Cluster",
            "metadata": {"name": f"c{i}", "labels": labels},
            "spec": {},
            "status": {"apiEnablements": _APIS if r.random() < 0.9 else _APIS[:1]},
        }
        if r.random() < 0.9:
            c["spec"]["provider"] = r.choice(["aws", "gcp", "azure"])
        if r.random() < 0.9:
            c["spec"]["region"] = r.choice(["r1", "r2"] if self.small else ["r1", "r2", "r3", "r4"])
        if r.random() < 0.8:
            c["spec"]["zones"] = r.sample(["za", "zb", "zc"], r.randint(1, 2))
        if r.random() < 0.3:
            c["spec"]["taints"] = [
                r.choice(
                    [
                        {
                            "key": "cluster.karmada.io/not-ready",
                            "effect": r.choice(["NoSchedule", "NoExecute"]),
                        },
                        {
                            "key": "dedicated",
                            "value": r.choice(["ml", "batch"]),
                            "effect": r.choice(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
                        },
                    ]
                )
            ]
        if r.random() < 0.03:
            c["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        if r.random() < 0.95:
            pods = r.choice([0, 2, 4, 5, 10, 20]) if self.small else r.randint(0, 500)
            s: dict[str, Any] = {
                "allocatable": {
                    "cpu": str(r.randint(0, 64)),
                    "memory": f"{r.randint(0, 256)}Gi",
                    "pods": str(pods),
                }
            }
            if r.random() < 0.8:
                s["allocated"] = {
                    "cpu": f"{r.randint(0, 64000)}m",
                    "memory": f"{r.randint(0, 200)}Gi",
                    "pods": str(r.randint(0, pods + 10)),
                }
            if r.random() < 0.3:
                s["allocating"] = {
                    "cpu": f"{r.randint(0, 4000)}m",
                    "memory": f"{r.randint(0, 8)}Gi",
                    "pods": str(r.randint(0, 20)),
                }
            if r.random() < 0.2:
                c["spec"]["resourceModels"] = _MODELS[: r.randint(1, 4)]
                s["allocatableModelings"] = [
                    {"grade": g, "count": r.randint(0, 40)} for g in range(r.randint(1, 4))
                ]
            c["status"]["resourceSummary"] = s
        return c

    def affinity(self, names: list[str]) -> dict[str, Any]:
        r = self.r
        a: dict[str, Any] = {}
        x = r.random()
        if x < 0.3:
            a["clusterNames"] = r.sample(names, r.randint(1, min(4, len(names))))
        elif x < 0.5:
            a["labelSelector"] = {"matchLabels": {"env": r.choice(["prod", "dev"])}}
        elif x < 0.65:
            expr: dict[str, Any] = {
                "key": r.choice(["env", "gpu"]),
                "operator": r.choice(["Exists", "DoesNotExist", "In", "NotIn"]),
            }
            if r.random() < 0.6:
                expr["values"] = ["prod"]
            a["labelSelector"] = {"matchExpressions": [expr]}
        elif x < 0.85:
            expr = {
                "key": r.choice(["provider", "region", "zone"]),
                "operator": r.choice(["In", "NotIn"]),
                "values": r.sample(["aws", "gcp", "r1", "r2", "za", "zb"], 2),
            }
            a["fieldSelector"] = {"matchExpressions": [expr]}
        if r.random() < 0.2:
            a["exclude"] = r.sample(names, 1)
        return a

    def binding(self, i: int, names: list[str]) -> dict[str, Any]:
        r = self.r
        kind = r.choice(["Deployment"] * 4 + ["ConfigMap"])
        api = "apps/v1" if kind == "Deployment" else "v1"
        uid = r.choice(["", "d43fdeeb-d750-4e2b-bee3-64eb94534f4c", f"u{i}"])
        spec: dict[str, Any] = {
            "resource": {"apiVersion": api, "kind": kind, "namespace": "ns", "name": f"w{i}", "uid": uid}
        }
        if kind == "Deployment":
            if self.small:
                spec["replicas"] = r.choice([0, 2, 4, 5, 6, 8, 10, 20, 40])
            else:
                spec["replicas"] = r.choice([0, 0, 1, 2, 3, r.randint(0, 60), r.randint(0, 400)])
            if r.random() < 0.1:
                spec["replicaRequirements"] = {}
            elif r.random() < 0.6:
                request = {
                    "cpu": r.choice(["100m", "250m", "1", "2", "0.5"]),
                    "memory": r.choice(["128Mi", "1Gi", "4Gi"]),
                }
                spec["replicaRequirements"] = {"resourceRequest": request}
        placement: dict[str, Any] = {}
        x = r.random()
        divided = {"replicaSchedulingType": "Divided"}
        if x < 0.15:
            placement["replicaScheduling"] = {"replicaSchedulingType": "Duplicated"}
        elif x < 0.45:
            placement["replicaScheduling"] = {**divided, "replicaDivisionPreference": "Aggregated"}
        elif x < 0.75:
            placement["replicaScheduling"] = {
                **divided,
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"},
            }
        elif x < 0.9:
            rules = [
                {"targetCluster": self.affinity(names), "weight": r.randint(1, 4)}
                for _ in range(r.randint(1, 3))
            ]
            placement["replicaScheduling"] = {
                **divided,
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {"staticWeightList": rules},
            }
        elif x < 0.93:
            placement["replicaScheduling"] = {**divided, "replicaDivisionPreference": "Weighted"}
        elif x < 0.95:
            placement["replicaScheduling"] = r.choice(
                [divided, {}, {**divided, "replicaDivisionPreference": "Weighted", "weightPreference": {}}]
            )
        x = r.random()
        if x < 0.02:
            placement["clusterAffinities"] = []
        elif x < 0.4:
            placement["clusterAffinities"] = []
            for t in range(r.randint(1, 3)):
                term = {"affinityName": f"t{t}", **self.affinity(names)}
                if r.random() < 0.4:
                    term["overflowAffinities"] = [
                        {"affinityName": f"o{t}{k}", **self.affinity(names)} for k in range(r.randint(0, 3))
                    ]
                placement["clusterAffinities"].append(term)
        elif x < 0.64:
            placement["clusterAffinity"] = self.affinity(names)
        if r.random() < 0.3:
            placement["clusterTolerations"] = [
                r.choice(
                    [
                        {"key": "cluster.karmada.io/not-ready", "operator": "Exists"},
                        {"operator": "Exists"},
                        {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
                    ]
                )
            ]
        if r.random() < (0.6 if self.small else 0.35):
            spread = []
            if r.random() < 0.5:
                spread.append(
                    {"spreadByField": "region", "minGroups": r.randint(0, 3), "maxGroups": r.randint(0, 4)}
                )
            if r.random() < 0.3:
                spread.append(
                    {"spreadByField": r.choice(["zone", "provider"]), "minGroups": 1, "maxGroups": 2}
                )
            if r.random() < 0.85:
                spread.append(
                    {"spreadByField": "cluster", "minGroups": r.randint(0, 4), "maxGroups": r.randint(0, 7)}
                )
            placement["spreadConstraints"] = spread
        spec["placement"] = placement
        status: dict[str, Any] = {}
        if r.random() < 0.45:
            held = r.sample(names, r.randint(1, min(4, len(names))))
            counts = [0, 1, 2, 5] if self.small else [0, r.randint(0, 20), r.randint(0, 200)]
            spec["clusters"] = [{"name": n, "replicas": r.choice(counts)} for n in held]
            if r.random() < 0.2:
                spec["gracefulEvictionTasks"] = [{"fromCluster": held[0]}]
        if r.random() < 0.2:
            spec["rescheduleTriggeredAt"] = "2026-03-01T00:00:00Z"
            status["lastScheduledTime"] = r.choice(["2026-02-01T00:00:00Z", "2026-04-01T00:00:00Z"])
        if r.random() < 0.3 and placement.get("clusterAffinities"):
            status["schedulerObservingAffinityName"] = r.choice(["t0", "t1", "t2", "stale"])
        return {
            "kind": "ResourceBinding",
            "metadata": {"name": f"b{i}", "namespace": "ns"},
            "spec": spec,
            "status": status,
        }
