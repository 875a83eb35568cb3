from __future__ import annotations

import pytest

from fleetsched.scheduler.framework import Code, FilterContext, FilterPlugin
from fleetsched.scheduler.plugins.taint_toleration import TaintToleration

from ..builders import BindingBuilder, ClusterBuilder, a_binding, a_cluster

_plugin: FilterPlugin = TaintToleration()  # checked by mypy against the Protocol


def _verdict(binding: BindingBuilder, cluster: ClusterBuilder) -> tuple[Code, tuple[str, ...]]:
    b = binding.build()
    ctx = FilterContext(b, "", b.target_names(), b.is_workload())
    r = _plugin.filter(ctx, cluster.build())
    return r.code, r.reasons


UNTOLERATED = "cluster(s) had untolerated taint {dedicated=gpu:NoSchedule}"


@pytest.mark.parametrize(
    ("binding", "cluster", "expected"),
    [
        pytest.param(a_binding(), a_cluster("m1"), (Code.SUCCESS, ()), id="no taints"),
        pytest.param(
            a_binding(),
            a_cluster("m1").tainted("dedicated", "NoSchedule", "gpu"),
            (Code.UNSCHEDULABLE, (UNTOLERATED,)),
            id="untolerated NoSchedule taint",
        ),
        pytest.param(
            a_binding().tolerating("dedicated", "NoSchedule", "gpu"),
            a_cluster("m1").tainted("dedicated", "NoSchedule", "gpu"),
            (Code.SUCCESS, ()),
            id="tolerated NoSchedule taint",
        ),
        pytest.param(
            a_binding().tolerating("dedicated", operator="Exists"),
            a_cluster("m1").tainted("dedicated", "NoExecute", "x"),
            (Code.SUCCESS, ()),
            id="Exists tolerates any value and empty effect any effect",
        ),
        pytest.param(
            a_binding().tolerating(operator="Exists"),
            a_cluster("m1").tainted("a", "NoSchedule").tainted("b", "NoExecute"),
            (Code.SUCCESS, ()),
            id="empty key with Exists tolerates everything",
        ),
        pytest.param(
            a_binding().tolerating("dedicated", "NoExecute", "gpu"),
            a_cluster("m1").tainted("dedicated", "NoSchedule", "gpu"),
            (Code.UNSCHEDULABLE, (UNTOLERATED,)),
            id="effect must match",
        ),
        pytest.param(
            a_binding().tolerating("dedicated", "NoSchedule", "1", operator="Gt"),
            a_cluster("m1").tainted("dedicated", "NoSchedule", "gpu"),
            (Code.UNSCHEDULABLE, (UNTOLERATED,)),
            id="comparison operators never tolerate",
        ),
        pytest.param(
            a_binding(),
            a_cluster("m1").tainted("soft", "PreferNoSchedule"),
            (Code.SUCCESS, ()),
            id="PreferNoSchedule is ignored",
        ),
        pytest.param(
            a_binding(),
            a_cluster("m1").tainted("cluster.karmada.io/not-ready", "NoSchedule"),
            (
                Code.UNSCHEDULABLE,
                ("cluster(s) had untolerated taint {cluster.karmada.io/not-ready:NoSchedule}",),
            ),
            id="a taint without value renders key:effect",
        ),
        pytest.param(
            a_binding(),
            a_cluster("m1")
            .tainted("soft", "PreferNoSchedule")
            .tainted("a", "NoExecute", "1")
            .tainted("b", "NoSchedule"),
            (Code.UNSCHEDULABLE, ("cluster(s) had untolerated taint {a=1:NoExecute}",)),
            id="the first untolerated taint is reported",
        ),
        pytest.param(
            a_binding().targets(m1=2),
            a_cluster("m1").tainted("dedicated", "NoSchedule", "gpu"),
            (Code.SUCCESS, ()),
            id="current targets bypass taints",
        ),
    ],
)
def test_taint_toleration(binding: BindingBuilder, cluster: ClusterBuilder, expected: tuple) -> None:
    assert _verdict(binding, cluster) == expected
