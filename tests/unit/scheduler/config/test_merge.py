"""kube-scheduler's merge rules over our per-point defaults: ``disabled`` and ``*``, in-place
replacement, appending, ``multiPoint``, weights."""

from __future__ import annotations

from typing import Any

import pytest

from fleetsched.scheduler.config import ExtensionPoint, PluginEntry, SchedulerConfiguration, default_profile

from .helpers import a_file, parse, with_plugins

FILTER, SCORE, QUEUE_SORT = ExtensionPoint.FILTER, ExtensionPoint.SCORE, ExtensionPoint.QUEUE_SORT
DEFAULT_FILTERS = [
    "APIEnablement",
    "TaintToleration",
    "ClusterAffinity",
    "SpreadConstraint",
    "ClusterEviction",
]
# An out-of-tree plugin with a filter and a score face, as an entry point would bring it.
TENANT = {"Tenant": frozenset({FILTER, SCORE}), "Cost": frozenset({SCORE})}


def points(doc: dict[str, Any], **options: Any) -> dict[ExtensionPoint, list[tuple[str, int]]]:
    profile = parse(doc, catalog=TENANT, **options).profiles[0]
    return {point: [(e.name, e.weight) for e in entries] for point, entries in profile.plugins.items()}


def names(doc: dict[str, Any], point: ExtensionPoint) -> list[str]:
    return [name for name, _ in points(doc).get(point, [])]


def test_no_profiles_means_the_default_profile() -> None:
    assert parse(a_file()) == SchedulerConfiguration()
    assert parse(a_file(profiles=[])).profiles == (default_profile(),)
    assert parse(a_file(profiles=[{}])).profiles == (default_profile(),)


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        pytest.param(
            {"filter": {"disabled": [{"name": "TaintToleration"}]}},
            ["APIEnablement", "ClusterAffinity", "SpreadConstraint", "ClusterEviction"],
            id="disable one",
        ),
        pytest.param(
            {"filter": {"enabled": [{"name": "TaintToleration"}]}},
            DEFAULT_FILTERS,
            id="enabling a default keeps its place",
        ),
        pytest.param(
            {"filter": {"enabled": [{"name": "Tenant"}]}},
            [*DEFAULT_FILTERS, "Tenant"],
            id="another plugin goes after the defaults",
        ),
        pytest.param(
            {
                "filter": {
                    "disabled": [{"name": "*"}],
                    "enabled": [{"name": "ClusterEviction"}, {"name": "APIEnablement"}],
                }
            },
            ["ClusterEviction", "APIEnablement"],
            id="* then the order written",
        ),
        pytest.param(
            {"filter": {"disabled": [{"name": "TaintToleration"}], "enabled": [{"name": "TaintToleration"}]}},
            ["APIEnablement", "ClusterAffinity", "SpreadConstraint", "ClusterEviction", "TaintToleration"],
            id="disable and enable moves it to the end",
        ),
        pytest.param(
            {"multiPoint": {"disabled": [{"name": "ClusterAffinity"}]}},
            ["APIEnablement", "TaintToleration", "SpreadConstraint", "ClusterEviction"],
            id="multiPoint disabled removes it at every point",
        ),
    ],
)
def test_filter_lists(plugins: dict[str, Any], expected: list[str]) -> None:
    assert names(with_plugins(**plugins), FILTER) == expected


def test_disabling_a_score_default_leaves_its_filter_face() -> None:
    doc = with_plugins(score={"disabled": [{"name": "ClusterAffinity"}]})
    assert names(doc, FILTER) == DEFAULT_FILTERS
    assert points(doc)[SCORE] == [("ClusterLocality", 1)]


def test_a_weight_overrides_in_place() -> None:
    doc = with_plugins(
        score={"enabled": [{"name": "ClusterLocality", "weight": 5}, {"name": "Cost", "weight": 2}]}
    )
    assert points(doc)[SCORE] == [("ClusterAffinity", 1), ("ClusterLocality", 5), ("Cost", 2)]


def test_an_unweighted_score_entry_weighs_one() -> None:
    assert points(with_plugins(score={"enabled": [{"name": "Cost"}]}))[SCORE][-1] == ("Cost", 1)


def test_multi_point_enables_a_plugin_at_every_point_it_implements() -> None:
    doc = with_plugins(multiPoint={"enabled": [{"name": "Tenant", "weight": 3}]})
    got = points(doc)
    assert [n for n, _ in got[FILTER]] == [*DEFAULT_FILTERS, "Tenant"]
    assert got[SCORE] == [("ClusterAffinity", 1), ("ClusterLocality", 1), ("Tenant", 3)]
    assert got[QUEUE_SORT] == [("PrioritySort", 1)]


def test_multi_point_goes_before_the_points_own_additions() -> None:
    doc = with_plugins(multiPoint={"enabled": [{"name": "Tenant"}]}, score={"enabled": [{"name": "Cost"}]})
    assert names(doc, SCORE) == ["ClusterAffinity", "ClusterLocality", "Tenant", "Cost"]


def test_the_points_own_entry_wins_over_multi_point() -> None:
    doc = with_plugins(
        multiPoint={"enabled": [{"name": "Tenant", "weight": 3}]},
        score={"enabled": [{"name": "Cost"}, {"name": "Tenant", "weight": 7}]},
    )
    assert points(doc)[SCORE] == [("ClusterAffinity", 1), ("ClusterLocality", 1), ("Cost", 1), ("Tenant", 7)]


def test_a_point_can_refuse_a_multi_point_plugin() -> None:
    doc = with_plugins(
        multiPoint={"enabled": [{"name": "Tenant"}]}, filter={"disabled": [{"name": "Tenant"}]}
    )
    assert names(doc, FILTER) == DEFAULT_FILTERS
    assert names(doc, SCORE)[-1] == "Tenant"


def test_star_at_a_point_skips_multi_point_there() -> None:
    doc = with_plugins(
        multiPoint={"enabled": [{"name": "Tenant"}]},
        filter={"disabled": [{"name": "*"}], "enabled": [{"name": "TaintToleration"}]},
    )
    assert names(doc, FILTER) == ["TaintToleration"]
    assert names(doc, SCORE) == ["ClusterAffinity", "ClusterLocality", "Tenant"]


def test_multi_point_weight_replaces_a_default_in_place() -> None:
    doc = with_plugins(multiPoint={"enabled": [{"name": "ClusterAffinity", "weight": 4}]})
    got = points(doc)
    assert got[SCORE] == [("ClusterAffinity", 4), ("ClusterLocality", 1)]
    assert [n for n, _ in got[FILTER]] == DEFAULT_FILTERS


def test_multi_point_star_leaves_only_what_is_written() -> None:
    doc = with_plugins(
        multiPoint={"disabled": [{"name": "*"}], "enabled": [{"name": "PrioritySort"}, {"name": "Tenant"}]}
    )
    assert points(doc) == {QUEUE_SORT: [("PrioritySort", 1)], FILTER: [("Tenant", 1)], SCORE: [("Tenant", 1)]}


def test_the_gate_changes_the_defaults_a_file_starts_from() -> None:
    doc = with_plugins(filter={"disabled": [{"name": "WorkloadAntiAffinity"}]})
    assert names_with_gate(doc) == [*DEFAULT_FILTERS, "WorkloadAffinity"]


def names_with_gate(doc: dict[str, Any]) -> list[str]:
    return [e.name for e in parse(doc, workload_affinity=True).profiles[0].enabled(FILTER)]


def test_the_other_fields_of_a_profile() -> None:
    doc = a_file(
        profiles=[
            {
                "schedulerName": "tenant-a",
                "plugins": {"score": {"enabled": [{"name": "Cost", "weight": 2}]}},
                "pluginConfig": [
                    {"name": "Cost", "args": {"label": "cost.example.com/per-cpu", "nested": {"a": [1]}}}
                ],
                "ignorablePlugins": ["Cost"],
                "pluginTimeout": "250ms",
            }
        ]
    )
    profile = parse(doc, catalog=TENANT).profiles[0]
    assert profile.scheduler_name == "tenant-a"
    assert profile.plugin_args == {"Cost": {"label": "cost.example.com/per-cpu", "nested": {"a": [1]}}}
    assert profile.ignorable_plugins == frozenset({"Cost"})
    assert profile.plugin_timeout_seconds == pytest.approx(0.25)
    assert profile.enabled(SCORE)[-1] == PluginEntry("Cost", 2)
