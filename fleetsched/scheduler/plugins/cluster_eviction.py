"""ClusterEviction filter: clusters the binding is being evicted from are out (scheduler.md §5.6)."""

from __future__ import annotations

from collections.abc import Hashable

from fleetsched.scheduler.framework import FilterContext, Result
from fleetsched.scheduler.types import ClusterInfo

NAME = "ClusterEviction"
REASON = "cluster(s) is in the process of eviction"


class ClusterEviction:
    """Rejects clusters named by a graceful eviction task of the binding."""

    name = NAME

    def cache_key(self, ctx: FilterContext) -> Hashable:
        """Verdicts depend on the eviction tasks only."""
        return ctx.binding.evicting_clusters

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Result:
        """Fail iff some gracefulEvictionTasks[].fromCluster is this cluster."""
        if cluster.name in ctx.binding.evicting_clusters:
            return Result.unschedulable(REASON)
        return Result.success()
