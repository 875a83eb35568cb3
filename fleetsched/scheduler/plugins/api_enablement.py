"""APIEnablement filter: the cluster must serve the resource's API."""

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
from fleetsched.scheduler.types import ClusterInfo

NAME = "APIEnablement"
REASON = "cluster(s) did not have the API resource"


class APIEnablement:
    """Rejects clusters whose status.apiEnablements lacks the resource's groupVersion + kind."""

    name = NAME
    cluster_inputs: ClassVar[ClusterFacet] = ClusterFacet.API_ENABLEMENTS

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """A rejected cluster helps once it reports a new API enablement; a new cluster may serve it."""
        events = ClusterEvent.API_ENABLEMENT_ADDED | ClusterEvent.CLUSTER_ADDED
        return (ClusterEventWithHint(events, queue_if_rejected_here),)

    def binding_key(self, ctx: FilterContext) -> Hashable:
        """Verdicts depend on the resource's API and the current targets only."""
        return (ctx.binding.resource.api_version, ctx.binding.resource.kind, ctx.target_names)

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Result:
        """Current targets pass; unknown API enablement counts as disabled."""
        if cluster.name in ctx.target_names:
            return Result.success()
        resource = ctx.binding.resource
        # The core group renders as "v1"; apiVersion already has that form.
        if (resource.api_version, resource.kind) in cluster.api_enablements:
            return Result.success()
        return Result.unschedulable(REASON)


def new(args: object, handle: Handle) -> APIEnablement:
    """The registry's factory (takes no args)."""
    return APIEnablement()
