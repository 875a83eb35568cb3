from __future__ import annotations

from fleetsched.scheduler.framework import FilterContext, ScorePlugin
from fleetsched.scheduler.plugins.cluster_locality import ClusterLocality

from ..builders import a_binding, a_cluster

_plugin: ScorePlugin = ClusterLocality()


def test_current_targets_score_100_even_with_zero_replicas() -> None:
    b = a_binding().targets(m1=0, m2=3).build()
    ctx = FilterContext(b, "", b.target_names(), True)
    assert [_plugin.score(ctx, a_cluster(n).build()) for n in ("m1", "m2", "m3")] == [100, 100, 0]
