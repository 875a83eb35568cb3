"""The in-tree defaults as data (one catalogue, read off the in-tree registry), and the profile a
``--plugins`` flag means, pinned to what the Scheduler's Framework runs with the same flag."""

from __future__ import annotations

import pytest

from fleetsched.scheduler.config import (
    ExtensionPoint,
    PluginEntry,
    Profile,
    default_profile,
    parse_configuration,
)
from fleetsched.scheduler.framework.defaults import PluginSelectionError, in_tree_points, in_tree_registry
from fleetsched.scheduler.pipeline import Scheduler, Settings

FILTER, SCORE, QUEUE_SORT = ExtensionPoint.FILTER, ExtensionPoint.SCORE, ExtensionPoint.QUEUE_SORT


def test_the_default_profile_is_karmadas_plugins_and_the_priority_sort() -> None:
    profile = default_profile()
    assert profile == Profile(
        scheduler_name="default-scheduler",
        plugins={
            QUEUE_SORT: (PluginEntry("PrioritySort"),),
            FILTER: tuple(
                PluginEntry(n)
                for n in (
                    "APIEnablement",
                    "TaintToleration",
                    "ClusterAffinity",
                    "SpreadConstraint",
                    "ClusterEviction",
                )
            ),
            SCORE: (PluginEntry("ClusterAffinity", 1), PluginEntry("ClusterLocality", 1)),
        },
    )


def test_the_workload_affinity_gate_adds_its_two_filters_at_the_end() -> None:
    names = [e.name for e in default_profile(workload_affinity=True).enabled(FILTER)]
    assert names[-2:] == ["WorkloadAffinity", "WorkloadAntiAffinity"]
    assert "WorkloadAffinity" not in in_tree_points()
    assert in_tree_points(workload_affinity=True)["WorkloadAffinity"] == frozenset({FILTER})


@pytest.mark.parametrize(
    ("flag", "gate"),
    [
        pytest.param("*", False, id="all"),
        pytest.param("", False, id="none"),
        pytest.param("*,-ClusterAffinity", False, id="a plugin that filters and scores leaves both"),
        pytest.param("TaintToleration,ClusterLocality", False, id="only two"),
        pytest.param("*,-APIEnablement,-ClusterLocality", False, id="two removed"),
        pytest.param("*,-WorkloadAntiAffinity", True, id="gated plugins"),
        pytest.param("-TaintToleration,*", False, id="a removal before * is undone by it"),
    ],
)
def test_a_plugins_flag_means_what_todays_scheduler_runs(flag: str, gate: bool) -> None:
    profile = default_profile(flag, workload_affinity=gate)
    scheduler = Scheduler(settings=Settings(plugins=flag, workload_affinity=gate))
    assert scheduler.profile == profile
    assert [e.name for e in profile.enabled(FILTER)] == [p.name for p in scheduler.framework.filters]
    assert [e.name for e in profile.enabled(SCORE)] == [p.name for p in scheduler.framework.scores]
    assert all(e.weight == 1 for e in profile.enabled(SCORE))
    assert profile.enabled(QUEUE_SORT) == (PluginEntry("PrioritySort"),)


def test_an_unknown_name_in_the_flag_is_refused_like_today() -> None:
    with pytest.raises(PluginSelectionError, match="unknown scheduler plugin 'Nope'"):
        default_profile("*,-Nope")
    with pytest.raises(PluginSelectionError, match="'WorkloadAffinity'"):
        default_profile("WorkloadAffinity")  # gate off: not registered


def test_the_catalogue_is_the_registry_with_each_plugins_own_points() -> None:
    registry = in_tree_registry()
    points = in_tree_points()
    assert list(points) == list(registry)
    assert points["ClusterAffinity"] == frozenset({FILTER, SCORE})
    assert points["PrioritySort"] == frozenset({QUEUE_SORT})
    assert SCORE in points["ClusterResourcesFit"]
    assert SCORE in points["ClusterResourcesBalancedAllocation"]


def test_the_loader_accepts_every_registered_plugin() -> None:
    text = (
        "apiVersion: config.fleetsched.io/v1alpha1\nkind: SchedulerConfiguration\nprofiles:\n"
        "- schedulerName: binpack\n  plugins:\n    score:\n      enabled:\n"
        "      - name: ClusterResourcesFit\n        weight: 2\n"
    )
    profile = parse_configuration(text, entry_points=False).configuration.profiles[0]
    assert PluginEntry("ClusterResourcesFit", 2) in profile.enabled(SCORE)
    scheduler = Scheduler(profile=profile)
    assert "ClusterResourcesFit" in [s.name for s in scheduler.framework.scores]
