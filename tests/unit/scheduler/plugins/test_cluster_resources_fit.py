"""ClusterResourcesFit: kube's NodeResourcesFit strategies on clusters, their args and normalisation."""

from __future__ import annotations

import os
from collections.abc import Hashable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
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
from fleetsched.scheduler.plugins import cluster_resources_fit as fit
from fleetsched.scheduler.plugins.cluster_resources_fit import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    ClusterResourcesFit,
    ClusterResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    ShapePoint,
    normalize_min_max,
)

from .resource_builders import GPU, binding, cluster, context

settings.register_profile(
    "resource-scores",
    max_examples=int(os.environ.get("SCHED_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
PROPERTIES = settings.get_profile("resource-scores")

# mypy checks the plugin against the Protocols it implements.
_score: ScorePlugin = ClusterResourcesFit()
_normalize: NormalizeScorePlugin = ClusterResourcesFit()
_declares: DeclaresInputs = ClusterResourcesFit()
_batch: BatchScorePlugin = ClusterResourcesFit()

CPU_MEM = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


def plugin(
    kind: str = LEAST_ALLOCATED,
    resources: tuple[ResourceSpec, ...] = CPU_MEM,
    shape: tuple[tuple[int, int], ...] = (),
) -> ClusterResourcesFit:
    points = tuple(ShapePoint(u, s * 10) for u, s in shape)
    return ClusterResourcesFit(ScoringStrategy(kind, resources, points))


# Per resource: requested = used + one replica's request; scores by kube's integer formulas.
#   A: cpu 1500m/4000m, memory 3Gi/8Gi
#   B: cpu 3000m/10000m, memory 9Gi/10Gi
#   C: cpu 3000m/10000m, memory 91Gi/100Gi
A = cluster("a", {"cpu": "4", "memory": "8Gi"}, {"cpu": "1", "memory": "2Gi"})
B = cluster("b", {"cpu": "10", "memory": "10Gi"}, {"cpu": "2", "memory": "8Gi"})
C = cluster(
    "c",
    {"cpu": "10", "memory": "100Gi"},
    {"cpu": "1500m", "memory": "60Gi"},
    {"cpu": "500m", "memory": "30Gi"},
)
SMALL = binding(cpu="500m", memory="1Gi")
ONE = binding(cpu="1", memory="1Gi")
SHAPE = ((0, 0), (50, 10), (100, 3))  # up to 100 at 50% utilisation, then down to 30


@pytest.mark.parametrize(
    ("scorer", "c", "b", "expected"),
    [
        # (4000-1500)*100//4000 = 62, (8-3)*100//8 = 62 -> (62+62)//2
        pytest.param(plugin(LEAST_ALLOCATED), A, SMALL, 62, id="least allocated, cpu and memory"),
        # 1500*100//4000 = 37, 3*100//8 = 37
        pytest.param(plugin(MOST_ALLOCATED), A, SMALL, 37, id="most allocated, cpu and memory"),
        # least: cpu 70, memory 10 -> (70*3 + 10*1)//4 = 55
        pytest.param(
            plugin(LEAST_ALLOCATED, (ResourceSpec("cpu", 3), ResourceSpec("memory", 1))),
            B,
            ONE,
            55,
            id="least allocated, weighted",
        ),
        # most: cpu 30, memory 90 -> (30*3 + 90)//4 = 45
        pytest.param(
            plugin(MOST_ALLOCATED, (ResourceSpec("cpu", 3), ResourceSpec("memory", 1))),
            B,
            ONE,
            45,
            id="most allocated, weighted",
        ),
        # allocated + allocating count as used: cpu 3000m/10000m -> 70, memory 91Gi/100Gi -> 9
        pytest.param(plugin(LEAST_ALLOCATED), C, ONE, 39, id="allocating counts as used"),
        # cpu util 30 -> 100*30//50 = 60; memory util 91 -> 100 + trunc(-70*41/50) = 100-57 = 43
        # (Go truncates toward zero; floor would give 42); round((60+43)/2) = round(51.5) = 52
        pytest.param(
            plugin(REQUESTED_TO_CAPACITY_RATIO, shape=SHAPE),
            C,
            ONE,
            52,
            id="requested to capacity ratio, truncation and rounding as in Go",
        ),
        # a resource whose shape score is 0 is left out of the mean: cpu util 30 -> 0, memory 91 -> 100
        pytest.param(
            plugin(REQUESTED_TO_CAPACITY_RATIO, shape=((30, 0), (91, 10))),
            C,
            ONE,
            100,
            id="requested to capacity ratio ignores zero-scoring resources",
        ),
        # linear: cpu 30, memory 91 -> round(60.5) = 61 (half away from zero)
        pytest.param(
            plugin(REQUESTED_TO_CAPACITY_RATIO, shape=((0, 0), (100, 10))),
            C,
            ONE,
            61,
            id="requested to capacity ratio, linear binpack shape",
        ),
    ],
)
def test_strategies_follow_kube_formulas(scorer: ClusterResourcesFit, c: Any, b: Any, expected: int) -> None:
    assert scorer.score(context(b), c) == expected


def test_the_batch_face_gives_the_same_scores() -> None:
    for kind in (LEAST_ALLOCATED, MOST_ALLOCATED):
        p = plugin(kind)
        for b in (SMALL, ONE, binding()):
            assert list(p.score_clusters(context(b), [A, B, C])) == [
                p.score(context(b), c) for c in (A, B, C)
            ]
    rtcr = plugin(REQUESTED_TO_CAPACITY_RATIO, shape=SHAPE)
    assert list(rtcr.score_clusters(context(ONE), [A, C])) == [rtcr.score(context(ONE), A), 52]


def test_a_cluster_that_cannot_take_one_replica_scores_zero() -> None:
    full = cluster("full", {"cpu": "8", GPU: 8}, {"cpu": "1", GPU: 8})
    roomy = cluster("roomy", {"cpu": "8", GPU: 8}, {"cpu": "1", GPU: 7})
    gpu_job = binding(cpu="1", **{GPU: 1})
    most = plugin(MOST_ALLOCATED, (ResourceSpec(GPU, 1),))
    # Without the rule MostAllocated would cap the over-full cluster at 100.
    assert most.score(context(gpu_job), full) == 0
    assert most.score(context(gpu_job), roomy) == 100
    no_gpu = cluster("cpu-only", {"cpu": "64"})
    assert most.score(context(gpu_job), no_gpu) == 0
    assert plugin(LEAST_ALLOCATED).score(context(gpu_job), no_gpu) == 0


def test_extended_resources_the_binding_does_not_request_are_left_out() -> None:
    c = cluster("c", {"cpu": "10", GPU: 8}, {"cpu": "2", GPU: 6})
    resources = (ResourceSpec("cpu", 1), ResourceSpec(GPU, 5))
    # cpu only: (2000+1000)*100//10000 = 30, the GPU weight does not count
    assert plugin(MOST_ALLOCATED, resources).score(context(binding(cpu="1")), c) == 30
    # with a GPU: cpu 30, gpu 7*100//8 = 87 -> (30 + 87*5)//6 = 77
    assert plugin(MOST_ALLOCATED, resources).score(context(binding(cpu="1", **{GPU: 1})), c) == 77
    # only GPUs scored and none requested: nothing to score
    assert plugin(MOST_ALLOCATED, (ResourceSpec(GPU, 1),)).score(context(binding(cpu="1")), c) == 0


def test_a_resource_the_cluster_does_not_report_scores_zero_and_keeps_its_weight() -> None:
    c = cluster("c", {"cpu": "10"}, {"cpu": "2"})  # no memory reported
    # cpu least: (10000-3000)*100//10000 = 70; memory 0 allocatable -> 0; (70 + 0)//2
    assert plugin(LEAST_ALLOCATED).score(context(binding(cpu="1")), c) == 35
    assert plugin(MOST_ALLOCATED).score(context(binding(cpu="1")), c) == 15


def test_over_committed_unrequested_resources_follow_kube() -> None:
    c = cluster("c", {"cpu": "10", "memory": "10Gi", GPU: 4}, {"cpu": "12", "memory": "5Gi"})
    gpu_job = binding(**{GPU: 1})
    # cpu requested 12000 > 10000: least 0, most capped at 100; memory 5/10 -> 50 either way
    assert plugin(LEAST_ALLOCATED).score(context(gpu_job), c) == 25
    assert plugin(MOST_ALLOCATED).score(context(gpu_job), c) == 75


def test_a_binding_without_requests_scores_current_utilisation() -> None:
    c = cluster("c", {"cpu": "10", "memory": "10Gi"}, {"cpu": "5", "memory": "2Gi"})
    assert plugin(MOST_ALLOCATED).score(context(binding()), c) == (50 + 20) // 2
    assert plugin(MOST_ALLOCATED).score(context(binding()), cluster("empty", {})) == 0


def test_declared_inputs_are_the_request_and_the_resources_facet() -> None:
    p = ClusterResourcesFit()
    assert p.cluster_inputs is ClusterFacet.RESOURCES
    key: Hashable = p.binding_key(context(binding(3, cpu="1")))
    assert key == p.binding_key(context(binding(7, cpu="1000m")))  # the replica count does not matter
    assert key != p.binding_key(context(binding(3, cpu="2")))


# ---- NormalizeScore ------------------------------------------------------------------------------


def test_normalisation_is_min_max_and_all_equal_is_the_maximum() -> None:
    assert normalize_min_max([15, 93, 56, 25]) == [0, 100, 52, 12]
    assert normalize_min_max([40, 40, 40]) == [100, 100, 100]
    assert normalize_min_max([7]) == [100]
    assert normalize_min_max([]) == []


@settings(PROPERTIES)
@given(st.lists(st.integers(0, 100), min_size=1, max_size=20))
def test_normalised_scores_stay_in_range_and_keep_the_order(raw: list[int]) -> None:
    out = normalize_min_max(raw)
    assert len(out) == len(raw)
    assert all(0 <= s <= 100 for s in out)
    if len(set(raw)) == 1:
        assert out == [100] * len(raw)
    else:
        assert out[raw.index(max(raw))] == 100 and out[raw.index(min(raw))] == 0
    for i in range(len(raw)):
        for j in range(len(raw)):
            if raw[i] <= raw[j]:
                assert out[i] <= out[j]


# ---- monotonicity and weights (hypothesis) --------------------------------------------------------

NAMES = ("cpu", "memory", GPU, "example.com/fpga")


@st.composite
def fleets_pair(draw: st.DrawFn) -> tuple[tuple[ResourceSpec, ...], dict[str, int], Any, Any]:
    """Scored resources with weights, a per-replica request, and two clusters where the second has
    at least as much free capacity of every resource (less used, or more allocatable); both take
    one replica."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    specs = tuple(ResourceSpec(n, draw(st.integers(1, 100))) for n in names)
    request: dict[str, int] = {}
    alloc_a: dict[str, int] = {}
    used_a: dict[str, int] = {}
    alloc_b: dict[str, int] = {}
    used_b: dict[str, int] = {}
    for n in names:
        r = draw(st.integers(0, 50))
        capacity = draw(st.integers(max(r, 1), 10_000))
        used = draw(st.integers(0, capacity - r))
        if r:
            request[n] = r
        alloc_a[n], used_a[n] = capacity, used
        more_allocatable = draw(st.integers(0, 10_000))
        less_used = draw(st.integers(0, used))
        alloc_b[n], used_b[n] = capacity + more_allocatable, used - less_used

    def unit(n: str, v: int) -> str:
        return f"{v}m" if n == "cpu" else str(v)

    a = cluster("a", {n: unit(n, v) for n, v in alloc_a.items()}, {n: unit(n, v) for n, v in used_a.items()})
    b = cluster("b", {n: unit(n, v) for n, v in alloc_b.items()}, {n: unit(n, v) for n, v in used_b.items()})
    req = {n: unit(n, v) for n, v in request.items()}
    return specs, req, a, b  # type: ignore[return-value]


@settings(PROPERTIES)
@given(fleets_pair())
def test_more_free_capacity_never_raises_most_allocated_nor_lowers_least_allocated(case: Any) -> None:
    specs, request, fuller, freer = case
    ctx = context(binding(**request))
    most, least = plugin(MOST_ALLOCATED, specs), plugin(LEAST_ALLOCATED, specs)
    assert most.score(ctx, freer) <= most.score(ctx, fuller)
    assert least.score(ctx, freer) >= least.score(ctx, fuller)
    for scorer in (most, least):
        assert 0 <= scorer.score(ctx, fuller) <= 100


@settings(PROPERTIES)
@given(fleets_pair(), st.integers(2, 5))
def test_weights_make_a_weighted_mean(case: Any, factor: int) -> None:
    specs, request, c, _ = case
    ctx = context(binding(**request))
    for kind in (MOST_ALLOCATED, LEAST_ALLOCATED):
        whole = plugin(kind, specs).score(ctx, c)
        singles = [plugin(kind, (ResourceSpec(s.name, 1),)).score(ctx, c) for s in specs]
        counted = [
            single
            for s, single in zip(specs, singles, strict=True)
            if request.get(s.name) or not fit.is_scalar_resource(s.name)
        ]
        # a weighted mean of the per-resource scores lies between them; scaling every weight changes nothing
        if counted:
            assert min(counted) <= whole <= max(counted)
        scaled = tuple(ResourceSpec(s.name, s.weight * factor) for s in specs)
        assert plugin(kind, scaled).score(ctx, c) == whole


# ---- args ----------------------------------------------------------------------------------------


def test_args_default_to_kube_defaults() -> None:
    assert ClusterResourcesFitArgs().strategy() == ScoringStrategy(LEAST_ALLOCATED, CPU_MEM, ())
    assert fit.new(None, None).strategy.type == LEAST_ALLOCATED
    strategy = ClusterResourcesFitArgs(
        {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": GPU}],
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
            },
        }
    ).strategy()
    assert strategy.resources == (ResourceSpec(GPU, 1),)
    assert strategy.shape == (ShapePoint(0, 0), ShapePoint(100, 100))  # 0..10 scaled to 0..100


def framework_with(args: dict[str, Any]) -> Framework:
    profile = Profile(
        plugins={ExtensionPoint.SCORE: (PluginEntry(fit.NAME, 2),)}, plugin_args={fit.NAME: args}
    )
    return Framework(defaults.in_tree_registry(), profile)


PREFIX = "profiles[default-scheduler].pluginConfig[ClusterResourcesFit].args"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"scoringStrategy": {"type": "Binpack"}},
            "scoringStrategy.type: unsupported value 'Binpack' (supported: LeastAllocated, MostAllocated, "
            "RequestedToCapacityRatio)",
        ),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 0}]}},
            "scoringStrategy.resources[0].weight: resource weight of cpu not in valid range (0, 100]",
        ),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 101}]}},
            "scoringStrategy.resources[0].weight: resource weight of cpu not in valid range (0, 100]",
        ),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu"}, {"name": "cpu"}]}},
            "scoringStrategy.resources[1].name: duplicate value 'cpu'",
        ),
        (
            {"scoringStrategy": {"resources": [{"weight": 2}]}},
            "scoringStrategy.resources[0].name: required: a resource name such as cpu or nvidia.com/gpu",
        ),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu", "weight": "1"}]}},
            "scoringStrategy.resources[0].weight: must be an integer, got '1'",
        ),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "scoringStrategy.requestedToCapacityRatio.shape: at least one point must be specified",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]
                    },
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: "
            "values must be sorted in increasing order",
        ),
        (
            {"scoringStrategy": {"requestedToCapacityRatio": {"shape": [{"utilization": 101, "score": 1}]}}},
            "scoringStrategy.requestedToCapacityRatio.shape[0].utilization: 101 not in valid range [0, 100]",
        ),
        (
            {"scoringStrategy": {"requestedToCapacityRatio": {"shape": [{"utilization": 10, "score": 11}]}}},
            "scoringStrategy.requestedToCapacityRatio.shape[0].score: 11 not in valid range [0, 10]",
        ),
        (
            {"scoringStrategy": {"requestedToCapacityRatio": {"shape": [{"utilization": 10}]}}},
            "scoringStrategy.requestedToCapacityRatio.shape[0].score: required",
        ),
        (
            {"scoringStrategy": {"strategy": "MostAllocated"}},
            "scoringStrategy.strategy: unknown field (known: requestedToCapacityRatio, resources, type)",
        ),
        ({"scoringStrategy": "MostAllocated"}, "scoringStrategy: must be a mapping, got str"),
    ],
)
def test_bad_args_are_one_line_naming_the_field(args: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginArgsError) as e:
        framework_with(args)
    assert str(e.value) == f"{PREFIX}: {message}"
    assert "\n" not in str(e.value)


def test_an_unknown_top_level_field_is_named_by_the_runtime() -> None:
    with pytest.raises(
        PluginArgsError, match=r"args\.ignoredResources: unknown field \(known: scoringStrategy\)"
    ):
        framework_with({"ignoredResources": ["example.com/foo"]})


def test_the_runtime_builds_the_plugin_from_its_args() -> None:
    built = framework_with(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": GPU, "weight": 3}]}}
    )
    p = built.plugin(fit.NAME)
    assert isinstance(p, ClusterResourcesFit)
    assert p.strategy == ScoringStrategy(MOST_ALLOCATED, (ResourceSpec(GPU, 3),), ())


@st.composite
def shapes(draw: st.DrawFn) -> list[dict[str, int]]:
    utilizations = sorted(draw(st.sets(st.integers(0, 100), min_size=1, max_size=6)))
    return [{"utilization": u, "score": draw(st.integers(0, 10))} for u in utilizations]


@settings(PROPERTIES)
@given(shapes(), fleets_pair())
def test_requested_to_capacity_ratio_scores_stay_within_the_shape(
    shape: list[dict[str, int]], case: Any
) -> None:
    specs, request, c, _ = case
    args = ClusterResourcesFitArgs(
        {
            "type": REQUESTED_TO_CAPACITY_RATIO,
            "resources": [{"name": s.name, "weight": s.weight} for s in specs],
            "requestedToCapacityRatio": {"shape": shape},
        }
    )
    scorer = fit.new(args, None)
    score = scorer.score(context(binding(**request)), c)
    scores = [p["score"] * 10 for p in shape]
    # a rounded weighted mean of points on the broken line (or 0 when every resource scores 0)
    assert score == 0 or min(scores) <= score <= max(scores)
    assert 0 <= score <= 100
