from __future__ import annotations

import pytest

from fleetsched.scheduler.framework import Code, FilterContext, FilterPlugin
from fleetsched.scheduler.plugins.api_enablement import REASON, APIEnablement

from ..builders import BindingBuilder, ClusterBuilder, a_binding, a_cluster

_plugin: FilterPlugin = APIEnablement()


def _code(binding: BindingBuilder, cluster: ClusterBuilder) -> tuple[Code, tuple[str, ...]]:
    b = binding.build()
    r = _plugin.filter(FilterContext(b, "", b.target_names(), b.is_workload()), cluster.build())
    return r.code, r.reasons


@pytest.mark.parametrize(
    ("binding", "cluster", "expected"),
    [
        pytest.param(a_binding(), a_cluster("m1"), (Code.SUCCESS, ()), id="API enabled"),
        pytest.param(
            a_binding(), a_cluster("m1").without_api(), (Code.UNSCHEDULABLE, (REASON,)), id="API missing"
        ),
        pytest.param(
            a_binding().configmap(), a_cluster("m1"), (Code.SUCCESS, ()), id="core group renders as v1"
        ),
        pytest.param(
            a_binding().targets(m1=1),
            a_cluster("m1").without_api(),
            (Code.SUCCESS, ()),
            id="current targets bypass the API check",
        ),
    ],
)
def test_api_enablement(binding: BindingBuilder, cluster: ClusterBuilder, expected: tuple) -> None:
    assert _code(binding, cluster) == expected


def test_kind_must_match_within_the_group_version() -> None:
    from dataclasses import replace

    cluster = replace(a_cluster("m1").build(), api_enablements=frozenset({("apps/v1", "StatefulSet")}))
    b = a_binding().build()
    r = _plugin.filter(FilterContext(b, "", b.target_names(), True), cluster)
    assert r.code is Code.UNSCHEDULABLE
