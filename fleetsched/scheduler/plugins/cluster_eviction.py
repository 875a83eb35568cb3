"""ClusterEviction filter: clusters the binding is being evicted from are out."""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

from fleetsched.plugin import ClusterEventWithHint, ClusterFacet, FilterContext, Handle, Result
from fleetsched.scheduler.types import ClusterInfo

NAME = "ClusterEviction"
REASON = "cluster(s) is in the process of eviction"


class ClusterEviction:
    """Rejects clusters named by a graceful eviction task of the binding."""

    name = NAME
    cluster_inputs: ClassVar[ClusterFacet] = ClusterFacet.NONE

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """No cluster or binding event changes its answer: only the binding's own eviction tasks
        do, and a change of the binding queues it anyway."""
        return ()

    def binding_key(self, ctx: FilterContext) -> Hashable:
        """Verdicts depend on the eviction tasks only."""
        return ctx.binding.evicting_clusters

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Result:
        """Fail iff some gracefulEvictionTasks[].fromCluster is this cluster."""
        if cluster.name in ctx.binding.evicting_clusters:
            return Result.unschedulable(REASON)
        return Result.success()


def new(args: object, handle: Handle) -> ClusterEviction:
    """The registry's factory (takes no args)."""
    return ClusterEviction()
