"""ClusterResourcesBalancedAllocation: kube's NodeResourcesBalancedAllocation formula on clusters."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.plugin import (
    BatchScorePlugin,
    ClusterFacet,
    DeclaresInputs,
    NormalizeScorePlugin,
    ScorePlugin,
)
from fleetsched.scheduler.framework import defaults
from fleetsched.scheduler.framework.interface import PluginArgsError
from fleetsched.scheduler.framework.profile import ExtensionPoint, PluginEntry, Profile
from fleetsched.scheduler.framework.runtime import Framework
from fleetsched.scheduler.plugins import cluster_resources_balanced_allocation as balanced
from fleetsched.scheduler.plugins.cluster_resources_balanced_allocation import (
    ClusterResourcesBalancedAllocation,
    ClusterResourcesBalancedAllocationArgs,
    balanced_score,
)
from fleetsched.scheduler.plugins.cluster_resources_fit import DEFAULT_RESOURCES, ResourceSpec

from .resource_builders import GPU, binding, cluster, context
from .test_cluster_resources_fit import PROPERTIES

_score: ScorePlugin = ClusterResourcesBalancedAllocation()
_normalize: NormalizeScorePlugin = ClusterResourcesBalancedAllocation()
_declares: DeclaresInputs = ClusterResourcesBalancedAllocation()
_batch: BatchScorePlugin = ClusterResourcesBalancedAllocation()


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        # two resources: std = |f1 - f2| / 2
        pytest.param([(3, 8, 1), (30, 80, 1)], 100, id="equal fractions"),
        pytest.param([(5, 10, 1), (25, 100, 1)], 87, id="0.5 and 0.25: 1 - 0.125"),
        # three: population std of 0.2, 0.5, 0.8 = sqrt(0.06) = 0.2449 -> int(75.5)
        pytest.param([(2, 10, 1), (5, 10, 1), (8, 10, 1)], 75, id="three resources"),
        pytest.param([(7, 10, 1)], 100, id="one resource: std 0"),
        pytest.param([(20, 10, 1), (5, 10, 1)], 75, id="a fraction above 1 counts as 1"),
        pytest.param([(5, 10, 1), (0, 0, 1)], 100, id="a resource not reported is left out"),
        # weights 3 and 1 on 0.5 and 0.1: mean 0.4, variance (3*0.01 + 0.09)/4 = 0.03 -> 1 - 0.1732
        pytest.param([(5, 10, 3), (1, 10, 1)], 82, id="weighted standard deviation"),
        pytest.param([(5, 10, 2), (25, 100, 2)], 87, id="equal weights are kube's formula"),
        pytest.param([], 100, id="nothing to score"),
    ],
)
def test_balanced_score_is_one_minus_the_standard_deviation(
    parts: list[tuple[int, int, int]], expected: int
) -> None:
    assert balanced_score(parts) == expected


def test_the_plugin_scores_after_one_more_replica() -> None:
    c = cluster("c", {"cpu": "10", "memory": "10Gi", GPU: 8}, {"cpu": "4", "memory": "2Gi"})
    ctx = context(binding(cpu="1", memory="1Gi"))
    # cpu 5/10, memory 3/10: std 0.1 -> 90; the GPU is not requested, so not scored
    p = ClusterResourcesBalancedAllocation(
        (ResourceSpec("cpu", 1), ResourceSpec("memory", 1), ResourceSpec(GPU, 1))
    )
    assert p.score(ctx, c) == 90
    assert list(p.score_clusters(ctx, [c, cluster("empty", {"cpu": "10", "memory": "10Gi"})])) == [90, 100]
    # a GPU job on a cluster without a free GPU scores 0
    assert p.score(context(binding(cpu="1", **{GPU: 9})), c) == 0
    assert p.cluster_inputs is ClusterFacet.RESOURCES
    assert p.binding_key(ctx) == p.binding_key(context(binding(5, cpu="1", memory="1Gi")))


@settings(PROPERTIES)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000), st.integers(1, 100)), max_size=5))
def test_balanced_scores_stay_in_range(parts: list[tuple[int, int, int]]) -> None:
    score = balanced_score(parts)
    assert 0 <= score <= 100
    counted = [(r, c, w) for r, c, w in parts if c]
    if len({min(r / c, 1.0) for r, c, _ in counted}) <= 1:
        if len(counted) <= 2 or len({w for _, _, w in counted}) > 1:
            assert score == 100
        else:
            assert score >= 99  # kube's float64 mean of three or more equal fractions may be off by an ulp


@settings(PROPERTIES)
@given(
    st.lists(st.tuples(st.integers(0, 1000), st.integers(1, 1000)), min_size=2, max_size=5),
    st.integers(1, 100),
)
def test_equal_weights_give_kube_value(parts: list[tuple[int, int]], weight: int) -> None:
    fractions = [min(r / c, 1.0) for r, c in parts]
    mean = sum(fractions) / len(fractions)
    std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    got = balanced_score([(r, c, weight) for r, c in parts])
    # the same value kube's code computes (its two-resource shortcut may differ in the last float bit)
    assert abs(got - int((1 - std) * 100)) <= 1
    if len(parts) == 2:
        assert got == int((1 - abs((fractions[0] - fractions[1]) / 2)) * 100)


def framework_with(args: dict[str, Any]) -> Framework:
    profile = Profile(
        plugins={ExtensionPoint.SCORE: (PluginEntry(balanced.NAME),)}, plugin_args={balanced.NAME: args}
    )
    return Framework(defaults.in_tree_registry(), profile)


def test_args_default_to_cpu_and_memory_and_validate_with_the_field_named() -> None:
    assert ClusterResourcesBalancedAllocationArgs().specs() == DEFAULT_RESOURCES
    built = framework_with({"resources": [{"name": GPU, "weight": 2}, {"name": "cpu"}]}).plugin(balanced.NAME)
    assert isinstance(built, ClusterResourcesBalancedAllocation)
    assert built.resources == (ResourceSpec(GPU, 2), ResourceSpec("cpu", 1))
    prefix = "profiles[default-scheduler].pluginConfig[ClusterResourcesBalancedAllocation].args"
    with pytest.raises(PluginArgsError) as e:
        framework_with({"resources": [{"name": "cpu", "weight": -1}]})
    assert (
        str(e.value) == f"{prefix}: resources[0].weight: resource weight of cpu not in valid range (0, 100]"
    )
    with pytest.raises(PluginArgsError) as e:
        framework_with({"resources": [{"name": "cpu", "wieght": 1}]})
    assert str(e.value) == f"{prefix}: resources[0].wieght: unknown field (known: name, weight)"
