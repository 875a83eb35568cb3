from __future__ import annotations

from fleetsched.scheduler.framework import Code, FilterContext, FilterPlugin
from fleetsched.scheduler.plugins.cluster_eviction import REASON, ClusterEviction

from ..builders import a_binding, a_cluster

_plugin: FilterPlugin = ClusterEviction()


def test_evicted_cluster_is_rejected_even_when_it_is_a_target() -> None:
    b = a_binding().targets(m1=1).evicting("m1").build()
    ctx = FilterContext(b, "", b.target_names(), True)
    assert _plugin.filter(ctx, a_cluster("m1").build()).reasons == (REASON,)
    assert _plugin.filter(ctx, a_cluster("m2").build()).code is Code.SUCCESS
