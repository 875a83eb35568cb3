"""ClusterLocality score: current targets score 100, everyone else 0."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import ClassVar

from fleetsched.plugin import ClusterFacet, FilterContext, Handle
from fleetsched.scheduler.types import ClusterInfo

NAME = "ClusterLocality"
MAX_SCORE = 100


class ClusterLocality:
    """Prefers clusters already listed in spec.clusters (even with 0 replicas)."""

    name = NAME
    cluster_inputs: ClassVar[ClusterFacet] = ClusterFacet.NONE

    def binding_key(self, ctx: FilterContext) -> Hashable:
        """Scores depend on the current targets only."""
        return ctx.target_names

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> int:
        """100 for a current target, else 0."""
        return MAX_SCORE if cluster.name in ctx.target_names else 0

    def score_clusters(self, ctx: FilterContext, clusters: Sequence[ClusterInfo]) -> list[int]:
        """``score`` for every cluster."""
        targets = ctx.target_names
        if not targets:
            return [0] * len(clusters)
        return [MAX_SCORE if c.name in targets else 0 for c in clusters]


def new(args: object, handle: Handle) -> ClusterLocality:
    """The registry's factory (takes no args)."""
    return ClusterLocality()
