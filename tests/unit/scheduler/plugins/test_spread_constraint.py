from __future__ import annotations

import pytest

from fleetsched.scheduler.framework import Code, FilterContext, FilterPlugin
from fleetsched.scheduler.plugins.spread_constraint import NO_PROVIDER, NO_REGION, NO_ZONES, SpreadConstraint

from ..builders import BindingBuilder, ClusterBuilder, a_binding, a_cluster

_plugin: FilterPlugin = SpreadConstraint()


@pytest.mark.parametrize(
    ("binding", "cluster", "expected"),
    [
        pytest.param(
            a_binding().spread("cluster", 1, 2),
            a_cluster("m1"),
            (Code.SUCCESS, ()),
            id="cluster constraints never fail",
        ),
        pytest.param(
            a_binding().spread("region", 1, 2),
            a_cluster("m1"),
            (Code.UNSCHEDULABLE, (NO_REGION,)),
            id="region missing",
        ),
        pytest.param(
            a_binding().spread("zone", 1, 2),
            a_cluster("m1").region("r"),
            (Code.UNSCHEDULABLE, (NO_ZONES,)),
            id="zones missing",
        ),
        pytest.param(
            a_binding().spread("provider", 1, 2).spread("region", 1, 2),
            a_cluster("m1"),
            (Code.UNSCHEDULABLE, (NO_PROVIDER,)),
            id="first violated constraint wins",
        ),
        pytest.param(
            a_binding().spread("provider", 1, 2).spread("zone", 1, 1),
            a_cluster("m1").provider("aws").zones("a", "b"),
            (Code.SUCCESS, ()),
            id="all present",
        ),
    ],
)
def test_spread_constraint(binding: BindingBuilder, cluster: ClusterBuilder, expected: tuple) -> None:
    b = binding.build()
    r = _plugin.filter(FilterContext(b, "", b.target_names(), True), cluster.build())
    assert (r.code, r.reasons) == expected
