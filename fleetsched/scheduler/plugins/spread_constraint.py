"""SpreadConstraint filter: clusters must carry the topology property spread over."""

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

NAME = "SpreadConstraint"
NO_PROVIDER = "cluster(s) did not have provider property"
NO_REGION = "cluster(s) did not have region property"
NO_ZONES = "cluster(s) did not have zones property"


class SpreadConstraint:
    """Rejects clusters lacking provider/region/zones when a constraint spreads by that field."""

    name = NAME
    cluster_inputs: ClassVar[ClusterFacet] = ClusterFacet.FIELDS

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """A rejected cluster helps once its provider, region or zone changes; a new cluster may have them."""
        events = ClusterEvent.FIELDS_CHANGED | ClusterEvent.CLUSTER_ADDED
        return (ClusterEventWithHint(events, queue_if_rejected_here),)

    def binding_key(self, ctx: FilterContext) -> Hashable:
        """Verdicts depend on the fields spread over only."""
        placement = ctx.binding.placement
        if placement is None:
            return ()
        return tuple(sc.spread_by_field for sc in placement.spread_constraints)

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Result:
        """First violated constraint wins; ``cluster`` constraints never fail."""
        placement = ctx.binding.placement
        if placement is None:
            return Result.success()
        for sc in placement.spread_constraints:
            field = sc.spread_by_field
            if field == "provider" and not cluster.provider:
                return Result.unschedulable(NO_PROVIDER)
            if field == "region" and not cluster.region:
                return Result.unschedulable(NO_REGION)
            if field == "zone" and not cluster.zones:
                return Result.unschedulable(NO_ZONES)
        return Result.success()


def new(args: object, handle: Handle) -> SpreadConstraint:
    """The registry's factory (takes no args)."""
    return SpreadConstraint()
