"""ClusterAffinity filter (and zero score): the placement's affinity must match."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import ClassVar

from fleetsched.plugin import (
    ClusterEvent,
    ClusterEventWithHint,
    ClusterFacet,
    FilterContext,
    Handle,
    Result,
    queue_if_rejected_here,
)
from fleetsched.scheduler.matching import affinity_mask, cluster_index, compile_affinity
from fleetsched.scheduler.types import ClusterAffinity as ClusterAffinityValue
from fleetsched.scheduler.types import ClusterInfo, ClusterSelection

NAME = "ClusterAffinity"
REASON = "cluster(s) did not match the placement cluster affinity constraint"
_REJECTED = Result.unschedulable(REASON)
_PASSED = Result.success()
# From this many clusters in one call, matching them through the snapshot's index pays.
_INDEX_MIN = 32


def affinities_for(ctx: FilterContext) -> tuple[ClusterAffinityValue, ...]:
    """The affinities a cluster may match: clusterAffinity, or the observed term (+ overflow tiers)."""
    placement = ctx.binding.placement
    if placement is None:
        return ()
    if placement.cluster_affinity is not None:
        return (placement.cluster_affinity,)
    for term in placement.cluster_affinities or ():
        if term.name == ctx.observed_affinity_name:
            found = (term.affinity,)
            # Overflow tiers only widen the choice for workloads.
            if ctx.is_workload and term.overflow:
                found += tuple(o.affinity for o in term.overflow)
            return found
    return ()


class ClusterAffinity:
    """Rejects clusters matching none of the applicable affinities; scores everyone 0."""

    name = NAME
    cluster_inputs: ClassVar[ClusterFacet] = ClusterFacet.LABELS | ClusterFacet.FIELDS

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """A rejected cluster may match once its labels or fields change; a new cluster may match."""
        events = ClusterEvent.LABELS_CHANGED | ClusterEvent.FIELDS_CHANGED | ClusterEvent.CLUSTER_ADDED
        return (ClusterEventWithHint(events, queue_if_rejected_here),)

    def binding_key(self, ctx: FilterContext) -> Hashable:
        """Verdicts depend on the applicable affinities only (the score is constant)."""
        return affinities_for(ctx)

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Result:
        """An empty list of affinities passes every cluster."""
        affinities = affinities_for(ctx)
        if not affinities or any(compile_affinity(a)(cluster) for a in affinities):
            return Result.success()
        return _REJECTED

    def filter_clusters(self, ctx: FilterContext, clusters: Sequence[ClusterInfo]) -> list[Result]:
        """``filter`` for every cluster, compiling the affinities once. Clusters of a snapshot
        (``ClusterSelection``) are matched all at once through the snapshot's ``ClusterIndex``."""
        affinities = affinities_for(ctx)
        if not affinities:
            return [_PASSED] * len(clusters)
        if isinstance(clusters, ClusterSelection) and len(clusters) >= _INDEX_MIN:
            index = cluster_index(clusters.snapshot)
            mask = 0
            for a in affinities:
                mask |= affinity_mask(a, index)
            bits = format(mask, "b").zfill(index.size)[::-1]  # bits[i] == "1": position i matches
            return [_PASSED if bits[i] == "1" else _REJECTED for i in clusters.positions]
        predicates = [compile_affinity(a) for a in affinities]
        if len(predicates) == 1:
            match = predicates[0]
            return [_PASSED if match(c) else _REJECTED for c in clusters]
        return [_PASSED if any(p(c) for p in predicates) else _REJECTED for c in clusters]

    def score_key(self, ctx: FilterContext) -> Hashable:
        """The score depends on nothing of the binding: one answer per cluster for all bindings."""
        return ()

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> int:
        """Always 0 in Karmada."""
        return 0

    def score_clusters(self, ctx: FilterContext, clusters: Sequence[ClusterInfo]) -> list[int]:
        """``score`` for every cluster."""
        return [0] * len(clusters)


def new(args: object, handle: Handle) -> ClusterAffinity:
    """The registry's factory (takes no args)."""
    return ClusterAffinity()
