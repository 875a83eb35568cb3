"""The example out-of-tree plugin package (examples/plugins/fleetsched-example-plugins), installed into
the test venv by hack/test.sh, found through its real entry points and run by the framework: the
configuration file shipped beside it loads, its plugins place bindings, and failures are named."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from fleetsched.plugin import MAX_SCORE, MIN_SCORE, FilterContext, PluginArgsError
from fleetsched.scheduler.config import load_configuration, parse_configuration
from fleetsched.scheduler.framework import in_tree_registry
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo, SchedulingBinding

from ..builders import a_binding, a_cluster

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "plugins"
CONFIG = EXAMPLES / "cost-tenant-config.yaml"
TENANT, PRICE = "tenant.example.com/name", "cost.example.com/price-per-hour"


def scheduler_for(text_or_path: str | Path) -> Scheduler:
    if isinstance(text_or_path, Path):
        loaded = load_configuration(text_or_path)
    else:
        loaded = parse_configuration(text_or_path, source="c.yaml")
    registry = in_tree_registry()
    registry.merge(loaded.out_of_tree)
    (profile,) = loaded.configuration.profiles
    return Scheduler(profile=profile, registry=registry)


def fleet() -> list[ClusterInfo]:
    def cluster(name: str, tenant: str, price: str, pods: int) -> ClusterInfo:
        return a_cluster(name).labeled(**{TENANT: tenant, PRICE: price}).free(pods).build()

    return [
        cluster("shop-large", "shop", "0.90", 400),
        cluster("shop-spot", "shop", "0.30", 60),
        cluster("shop-standard", "shop", "0.50", 120),
        cluster("analytics-1", "analytics", "0.10", 200),
    ]


def one_cluster_binding(namespace: str) -> tuple[SchedulingBinding, object]:
    builder = a_binding("web").replicas(3).aggregated().spread("cluster", 1, 1)
    return dataclasses.replace(builder.build(), namespace=namespace), builder.status()


def profile_doc(**profile: object) -> str:
    doc = {
        "apiVersion": "config.fleetsched.io/v1alpha1",
        "kind": "SchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", **profile}],
    }
    return yaml.safe_dump(doc, sort_keys=False)


def test_the_shipped_configuration_loads_the_plugins_through_their_entry_points() -> None:
    loaded = load_configuration(CONFIG)
    assert sorted(loaded.out_of_tree) == ["ExampleCost", "ExampleTenant"]
    assert loaded.out_of_tree["ExampleCost"].__module__ == "fleetsched_example_plugins.cost"


def test_the_cheapest_cluster_of_the_tenant_wins_with_the_weighted_normalised_cost() -> None:
    scheduler = scheduler_for(CONFIG)
    binding, status = one_cluster_binding("shop")
    result = scheduler.schedule(binding, status, Snapshot(fleet()))
    assert [(t.name, t.replicas) for t in result.clusters or ()] == [("shop-spot", 3)]
    attempt = result.attempts[0]
    rejected = {v.cluster: (v.plugin, v.reasons) for v in attempt.verdicts if not v.feasible}
    assert rejected == {"analytics-1": ("ExampleTenant", (f"cluster(s) not labelled {TENANT}=shop",))}
    cost = {
        n.cluster: (p.raw, p.normalized, p.weight, p.weighted)
        for n in attempt.numbers
        for p in n.parts
        if p.plugin == "ExampleCost"
    }
    assert cost == {
        "shop-spot": (300, 100, 2, 200),
        "shop-standard": (500, 66, 2, 132),
        "shop-large": (900, 0, 2, 0),
    }


def test_without_the_plugins_the_most_available_cluster_of_any_tenant_wins() -> None:
    binding, status = one_cluster_binding("shop")
    result = Scheduler().schedule(binding, status, Snapshot(fleet()))
    assert [t.name for t in result.clusters or ()] == ["shop-large"]
    other, other_status = one_cluster_binding("analytics")
    assert [t.name for t in Scheduler().schedule(other, other_status, Snapshot(fleet())).clusters or ()] == [
        "shop-large"
    ]


def test_a_tenant_with_one_cluster_gets_that_cluster_only() -> None:
    binding, status = one_cluster_binding("analytics")
    result = scheduler_for(CONFIG).schedule(binding, status, Snapshot(fleet()))
    assert [t.name for t in result.clusters or ()] == ["analytics-1"]


def test_a_tenant_without_clusters_is_unschedulable_naming_the_filter() -> None:
    binding, status = one_cluster_binding("nobody")
    result = scheduler_for(CONFIG).schedule(binding, status, Snapshot(fleet()))
    assert not result.clusters and result.condition is not None
    assert result.condition.reason == "NoClusterFit"
    assert f"4 cluster(s) not labelled {TENANT}=nobody" in result.condition.message


def test_verdicts_are_reused_across_the_bindings_of_one_tenant() -> None:
    """Declared inputs (labels; the tenant): the filter is asked once per cluster and tenant."""
    scheduler = scheduler_for(CONFIG)
    plugin = scheduler.framework.plugin("ExampleTenant")
    asked: list[tuple[str, str]] = []
    real = plugin.filter  # type: ignore[union-attr]

    def counting(ctx: Any, cluster: ClusterInfo) -> Any:
        asked.append((ctx.binding.namespace, cluster.name))
        return real(ctx, cluster)

    plugin.filter = counting  # type: ignore[union-attr]
    snapshot = Snapshot(fleet())
    for name, namespace in (("a", "shop"), ("b", "shop"), ("c", "shop"), ("d", "analytics")):
        binding, status = one_cluster_binding(namespace)
        scheduler.schedule(dataclasses.replace(binding, name=name), status, snapshot)
    assert sorted(asked) == sorted((ns, c.name) for ns in ("shop", "analytics") for c in fleet())


def test_invalid_args_are_one_line_naming_profile_plugin_and_field() -> None:
    doc = profile_doc(
        plugins={"score": {"enabled": [{"name": "ExampleCost"}]}},
        pluginConfig=[{"name": "ExampleCost", "args": {"defaultScore": 250}}],
    )
    with pytest.raises(PluginArgsError) as caught:
        scheduler_for(doc)
    assert str(caught.value) == (
        "profiles[default-scheduler].pluginConfig[ExampleCost].args: "
        "defaultScore: must be an integer in 0..100, got 250"
    )


def test_an_unknown_arg_is_refused_naming_it() -> None:
    doc = profile_doc(
        plugins={"filter": {"enabled": [{"name": "ExampleTenant"}]}},
        pluginConfig=[{"name": "ExampleTenant", "args": {"label": "x"}}],
    )
    with pytest.raises(PluginArgsError, match=r"pluginConfig\[ExampleTenant\]\.args\.label: unknown field"):
        scheduler_for(doc)


@pytest.mark.parametrize("point", ["Filter", "Score"])
def test_a_raising_plugin_fails_the_binding_naming_it(point: str) -> None:
    doc = profile_doc(
        plugins={point.lower(): {"enabled": [{"name": "ExampleFlaky"}]}},
        pluginConfig=[{"name": "ExampleFlaky", "args": {"failAt": point, "message": "price feed down"}}],
    )
    binding, status = one_cluster_binding("shop")
    result = scheduler_for(doc).schedule(binding, status, Snapshot(fleet()))
    assert not result.clusters and result.condition is not None
    message = f"plugin ExampleFlaky failed at {point}: InjectedFailure: price feed down"
    assert message in result.condition.message


@pytest.mark.parametrize("point", ["Filter", "Score"])
def test_an_ignorable_raising_plugin_is_skipped_and_said_so(point: str) -> None:
    doc = profile_doc(
        plugins={
            point.lower(): {"enabled": [{"name": "ExampleFlaky"}]},
            "score": {"enabled": [{"name": "ExampleCost", "weight": 2}]}
            if point == "Filter"
            else {"enabled": [{"name": "ExampleFlaky"}, {"name": "ExampleCost", "weight": 2}]},
        },
        pluginConfig=[{"name": "ExampleFlaky", "args": {"failAt": point, "message": "price feed down"}}],
        ignorablePlugins=["ExampleFlaky"],
    )
    binding, status = one_cluster_binding("shop")
    result = scheduler_for(doc).schedule(binding, status, Snapshot(fleet()))
    assert [t.name for t in result.clusters or ()] == ["analytics-1"]  # cheapest; no tenant filter here
    (skipped,) = result.attempts[0].skipped
    assert (skipped.plugin, skipped.point) == ("ExampleFlaky", point)
    assert "InjectedFailure: price feed down" in skipped.reason


PRICES = st.one_of(st.none(), st.sampled_from(["x", "NaN"]), st.decimals(0, 50, places=3).map(str))


@given(st.lists(PRICES, min_size=1, max_size=12), st.integers(MIN_SCORE, MAX_SCORE))
def test_cost_normalisation_is_bounded_and_cheaper_never_scores_lower(
    prices: list[str | None], default: int
) -> None:
    from fleetsched_example_plugins.cost import ExampleCost, ExampleCostArgs

    plugin = ExampleCost(ExampleCostArgs(defaultScore=default))
    ctx = FilterContext(a_binding().build(), "", frozenset(), True)
    clusters = [ClusterInfo(f"c{i}", {} if p is None else {PRICE: p}) for i, p in enumerate(prices)]
    raw = [plugin.score(ctx, c) for c in clusters]
    normalized = list(plugin.normalize_score(ctx, clusters, raw))
    assert all(MIN_SCORE <= s <= MAX_SCORE for s in normalized)
    priced = [(r, s) for r, s in zip(raw, normalized, strict=True) if r >= 0]
    if priced:
        assert max(s for _, s in priced) == MAX_SCORE  # the cheapest gets 100
        for r1, s1 in priced:
            for r2, s2 in priced:
                if r1 < r2:
                    assert s1 >= s2
    assert all(s == default for r, s in zip(raw, normalized, strict=True) if r < 0)
