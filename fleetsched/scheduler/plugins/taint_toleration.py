"""TaintToleration filter: NoSchedule/NoExecute taints must be tolerated."""

from __future__ import annotations

from collections.abc import Hashable
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
from fleetsched.scheduler.matching import tolerates
from fleetsched.scheduler.types import ClusterInfo

NAME = "TaintToleration"
_EFFECTS = ("NoSchedule", "NoExecute")


class TaintToleration:
    """Rejects a cluster on its first untolerated NoSchedule/NoExecute taint."""

    name = NAME
    cluster_inputs: ClassVar[ClusterFacet] = ClusterFacet.TAINTS

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """A rejected cluster helps once a taint is removed from it; a new cluster may tolerate."""
        events = ClusterEvent.TAINT_REMOVED | ClusterEvent.CLUSTER_ADDED
        return (ClusterEventWithHint(events, queue_if_rejected_here),)

    def binding_key(self, ctx: FilterContext) -> Hashable:
        """Verdicts depend on the tolerations and the current targets only."""
        placement = ctx.binding.placement
        return (placement.cluster_tolerations if placement is not None else (), ctx.target_names)

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Result:
        """Current targets pass: evicting on NoExecute is the taint manager's job, not ours."""
        if cluster.name in ctx.target_names:
            return Result.success()
        placement = ctx.binding.placement
        tolerations = placement.cluster_tolerations if placement is not None else ()
        for taint in cluster.taints:
            if taint.effect not in _EFFECTS:
                continue
            if not any(tolerates(t, taint) for t in tolerations):
                return Result.unschedulable(f"cluster(s) had untolerated taint {{{taint.render()}}}")
        return Result.success()


def new(args: object, handle: Handle) -> TaintToleration:
    """The registry's factory (takes no args)."""
    return TaintToleration()
