"""ExampleCost through the public plugin API only: raw price scores, min-max normalisation with the
cheapest at 100, the default score for unpriced clusters, args validation, declared inputs."""

from __future__ import annotations

import pytest
from fleetsched_example_plugins.cost import ExampleCost, ExampleCostArgs, price_of

from fleetsched.plugin import ClusterFacet, ClusterInfo, DeclaresInputs, FilterContext, SchedulingBinding

LABEL = "cost.example.com/price-per-hour"


def ctx() -> FilterContext:
    binding = SchedulingBinding(kind="ResourceBinding", name="web", namespace="shop")
    return FilterContext(binding, "", frozenset(), is_workload=True)


def cluster(name: str, price: str | None, key: str = LABEL) -> ClusterInfo:
    return ClusterInfo(name=name, labels={} if price is None else {key: price})


def scores(plugin: ExampleCost, clusters: list[ClusterInfo]) -> tuple[list[int], list[int]]:
    raw = [plugin.score(ctx(), c) for c in clusters]
    return raw, list(plugin.normalize_score(ctx(), clusters, raw))


def test_the_cheapest_cluster_scores_100_and_the_dearest_0() -> None:
    fleet = [cluster("a", "0.90"), cluster("b", "0.30"), cluster("c", "0.50")]
    raw, normalized = scores(ExampleCost(), fleet)
    assert raw == [900, 300, 500]
    assert normalized == [0, 100, 66]


def test_equal_prices_all_score_100() -> None:
    _, normalized = scores(ExampleCost(), [cluster("a", "2"), cluster("b", "2")])
    assert normalized == [100, 100]


@pytest.mark.parametrize("value", [None, "cheap", "NaN", "Infinity", "-1"])
def test_an_unpriced_cluster_gets_the_default_score(value: str | None) -> None:
    plugin = ExampleCost(ExampleCostArgs(defaultScore=40))
    raw, normalized = scores(plugin, [cluster("a", "1"), cluster("b", value), cluster("c", "3")])
    assert raw[1] == -1
    assert normalized == [100, 40, 0]


def test_no_priced_cluster_at_all_gives_every_cluster_the_default() -> None:
    plugin = ExampleCost(ExampleCostArgs(defaultScore=7))
    assert scores(plugin, [cluster("a", None), cluster("b", None)])[1] == [7, 7]


def test_the_label_key_is_an_arg() -> None:
    plugin = ExampleCost(ExampleCostArgs(labelKey="cost.example.com/tier"))
    fleet = [cluster("a", "3", "cost.example.com/tier"), cluster("b", "1", "cost.example.com/tier")]
    assert scores(plugin, fleet) == ([3000, 1000], [0, 100])


def test_prices_are_counted_in_thousandths() -> None:
    assert price_of("0.42") == 420
    assert price_of("0.0004") == 0
    assert price_of("12") == 12000
    assert price_of("1e2") == 100000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"labelKey": ""}, "labelKey: must be a non-empty label key"),
        ({"labelKey": 3}, "labelKey: must be a non-empty label key"),
        ({"defaultScore": 101}, "defaultScore: must be an integer in 0..100, got 101"),
        ({"defaultScore": True}, "defaultScore: must be an integer in 0..100, got True"),
        ({"defaultScore": "5"}, "defaultScore: must be an integer in 0..100, got '5'"),
    ],
)
def test_invalid_args_are_refused_naming_the_field(args: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ExampleCostArgs(**args)  # type: ignore[arg-type]


def test_it_declares_labels_and_no_binding_input() -> None:
    plugin = ExampleCost()
    assert isinstance(plugin, DeclaresInputs)
    assert plugin.cluster_inputs is ClusterFacet.LABELS
    other = FilterContext(
        SchedulingBinding(kind="ResourceBinding", name="x", namespace="y"), "", frozenset(), False
    )
    assert plugin.binding_key(ctx()) == plugin.binding_key(other)
