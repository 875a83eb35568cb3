"""One real Scheduler per configuration profile: the in-tree registry plus the file's out-of-tree
plugins, duplicates refused, each profile's plugins actually run."""

from __future__ import annotations

from typing import Any

import pytest

from fleetsched.scheduler.framework.interface import Status
from fleetsched.scheduler.framework.profile import ExtensionPoint, PluginEntry, Profile
from fleetsched.scheduler.pipeline import Settings
from fleetsched.scheduler.profiles import ProfileError, profile_schedulers
from fleetsched.scheduler.snapshot import Snapshot

from .builders import a_binding, a_cluster


class OnlyTeamA:
    """An out-of-tree filter: keeps clusters labelled team=a."""

    name = "OnlyTeamA"

    def filter(self, ctx: Any, cluster: Any) -> Status:
        return Status.success() if cluster.labels.get("team") == "a" else Status.unschedulable("not team a")


def only_team_a(args: object, handle: object) -> OnlyTeamA:
    return OnlyTeamA()


def tenant_profile(name: str) -> Profile:
    return Profile(
        scheduler_name=name,
        plugins={
            ExtensionPoint.QUEUE_SORT: (PluginEntry("PrioritySort"),),
            ExtensionPoint.FILTER: (PluginEntry("APIEnablement"), PluginEntry("OnlyTeamA")),
        },
    )


def test_each_profile_runs_its_own_plugins_including_out_of_tree_ones() -> None:
    schedulers = profile_schedulers(
        (Profile(scheduler_name="default-scheduler"), tenant_profile("tenant")),
        Settings(),
        out_of_tree={"OnlyTeamA": only_team_a},
    )
    snapshot = Snapshot(
        [a_cluster("a1").labeled(team="a").build(), a_cluster("b1").labeled(team="b").build()]
    )
    binding = a_binding().replicas(1).duplicated()
    tenant = schedulers["tenant"].schedule(binding.build(), binding.status(), snapshot)
    assert [t.name for t in tenant.clusters or ()] == ["a1"]
    plain = schedulers["default-scheduler"].schedule(binding.build(), binding.status(), snapshot)
    assert sorted(t.name for t in plain.clusters or ()) == ["a1", "b1"]


def test_an_out_of_tree_plugin_cannot_take_an_in_tree_name() -> None:
    with pytest.raises(ProfileError, match=r"out-of-tree plugins: .*TaintToleration"):
        profile_schedulers((Profile(),), Settings(), out_of_tree={"TaintToleration": only_team_a})


def test_a_profile_naming_a_plugin_nobody_registered_is_one_line() -> None:
    with pytest.raises(ProfileError, match=r"profiles\[tenant\].plugins: unknown plugin 'OnlyTeamA'"):
        profile_schedulers((tenant_profile("tenant"),), Settings())


def test_the_files_empty_workload_setting_reaches_every_profile() -> None:
    schedulers = profile_schedulers(
        (Profile(), tenant_profile("tenant")),
        Settings(),
        out_of_tree={"OnlyTeamA": only_team_a},
        enable_empty_workload_propagation=True,
    )
    assert all(s.settings.enable_empty_workload_propagation for s in schedulers.values())
