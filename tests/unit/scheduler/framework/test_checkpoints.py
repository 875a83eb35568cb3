"""The runtime offers the per-binding budget a checkpoint after every plugin and extension point,
outside the plugins' error handling, so a budget stop is never mistaken for a plugin failure."""

from __future__ import annotations

from typing import Any

import pytest

from fleetsched.scheduler import groups
from fleetsched.scheduler.framework.defaults import default_profile, in_tree_registry
from fleetsched.scheduler.framework.interface import Status
from fleetsched.scheduler.framework.profile import ExtensionPoint, PluginEntry, Profile
from fleetsched.scheduler.framework.registry import Registry
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot

from ..builders import a_binding, a_cluster

SNAPSHOT = Snapshot([a_cluster("m1").build(), a_cluster("m2").build()])


class OutOfBudget(Exception):
    pass


class Recording:
    """A filter that records, for every call, which checkpoint the budget had reached."""

    name = "Recording"

    def __init__(self, seen: list[int], count: list[int]) -> None:
        self.seen, self.count = seen, count

    def filter(self, ctx: Any, cluster: Any) -> Status:
        self.seen.append(self.count[0])
        return Status.success()


def schedule(scheduler: Scheduler) -> Any:
    binding = a_binding().replicas(1).duplicated()
    return scheduler.schedule(binding.build(), binding.status(), SNAPSHOT)


def test_every_filter_and_score_plugin_meets_a_checkpoint() -> None:
    calls = [0]

    def check() -> None:
        calls[0] += 1

    scheduler = Scheduler()
    profile = default_profile()
    with groups.checkpointing(check):
        result = schedule(scheduler)
    assert result.scheduled
    plugins = len(profile.enabled(ExtensionPoint.FILTER)) + len(profile.enabled(ExtensionPoint.SCORE))
    # one per plugin, one per extension point (Filter, Score), one per affinity term
    assert calls[0] >= plugins + 2 + 1


def test_a_budget_stop_between_filters_propagates_and_later_filters_do_not_run() -> None:
    seen: list[int] = []
    count = [0]

    def check() -> None:
        count[0] += 1
        if count[0] == 3:  # the term's checkpoint, then APIEnablement's, then TaintToleration's
            raise OutOfBudget

    registry: Registry = in_tree_registry()
    registry.register("Recording", lambda args, handle: Recording(seen, count))
    profile = Profile(
        plugins={
            ExtensionPoint.FILTER: (
                PluginEntry("APIEnablement"),
                PluginEntry("TaintToleration"),
                PluginEntry("Recording"),
            )
        }
    )
    scheduler = Scheduler(profile=profile, registry=registry)
    with groups.checkpointing(check), pytest.raises(OutOfBudget):
        schedule(scheduler)
    assert seen == []
