"""WorkloadAntiAffinity filter (alpha, gate WorkloadAffinity): keep one anti-affinity group apart (§5.7)."""

from __future__ import annotations

from fleetsched.plugin import (
    ClusterEvent,
    ClusterEventWithHint,
    FilterContext,
    Handle,
    Result,
    queue_if_rejected_here,
)
from fleetsched.scheduler.types import ClusterInfo, PeerBinding

NAME = "WorkloadAntiAffinity"
REASON = "cluster already has workload with the same anti-affinity group"


def _anti_affinity_group(peer: PeerBinding) -> str:
    return peer.anti_affinity_group


class WorkloadAntiAffinity:
    """Rejects a cluster that a peer of the same anti-affinity group already targets.

    Declares no inputs (its verdicts depend on other bindings' placements), so it is never reused.
    """

    name = NAME

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """A rejected cluster helps once an anti-affine peer leaves it (deleted or moved); a new
        cluster has no peer."""
        events = ClusterEvent.BINDING_DELETED | ClusterEvent.BINDING_RESCHEDULED | ClusterEvent.CLUSTER_ADDED
        return (ClusterEventWithHint(events, queue_if_rejected_here),)

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Result:
        """Pass for current targets and bindings without a group."""
        binding = ctx.binding
        group = binding.anti_affinity_group
        if not group or cluster.name in ctx.target_names:
            return Result.success()
        for peer in ctx.group_peers(_anti_affinity_group, group):
            if cluster.name in peer.targets:
                return Result.unschedulable(REASON)
        return Result.success()


def new(args: object, handle: Handle) -> WorkloadAntiAffinity:
    """The registry's factory (takes no args)."""
    return WorkloadAntiAffinity()
