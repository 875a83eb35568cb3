"""WorkloadAffinity filter (alpha, gate WorkloadAffinity): co-locate bindings of one affinity group (§5.7)."""

from __future__ import annotations

from fleetsched.plugin import FilterContext, Handle, Result
from fleetsched.scheduler.types import ClusterInfo, PeerBinding

NAME = "WorkloadAffinity"
REASON = "ResourceBinding with the same affinity group does not target this cluster"


def _affinity_group(peer: PeerBinding) -> str:
    return peer.affinity_group


class WorkloadAffinity:
    """Rejects a cluster that some placed peer of the same affinity group does not target.

    Declares no inputs (its verdicts depend on other bindings' placements), so it is never reused.
    """

    name = NAME

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Result:
        """Pass for current targets, bindings without a group, and groups with no placed peer."""
        binding = ctx.binding
        group = binding.affinity_group
        if not group or cluster.name in ctx.target_names:
            return Result.success()
        for peer in ctx.group_peers(_affinity_group, group):
            if peer.targets and cluster.name not in peer.targets:
                return Result.unschedulable(REASON)
        return Result.success()


def new(args: object, handle: Handle) -> WorkloadAffinity:
    """The registry's factory (takes no args)."""
    return WorkloadAffinity()
