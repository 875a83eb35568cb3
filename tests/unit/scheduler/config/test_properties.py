"""Invariants of the configuration, on generated profiles (hypothesis): what is written loads back
equal, and the merge keeps the defaults' order, removes what is disabled and appends the rest."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.scheduler.config import (
    ExtensionPoint,
    PluginEntry,
    Profile,
    SchedulerConfiguration,
    configuration_to_yaml,
)
from fleetsched.scheduler.framework.defaults import default_profile, in_tree_points

from .helpers import parse, with_plugins

settings.register_profile("config-dev", max_examples=60, deadline=None)
FILTER, SCORE, QUEUE_SORT = ExtensionPoint.FILTER, ExtensionPoint.SCORE, ExtensionPoint.QUEUE_SORT
EXTRA = {
    "Tenant": frozenset({FILTER, SCORE}),
    "Cost": frozenset({SCORE}),
    "Gate": frozenset({ExtensionPoint.PRE_FILTER, ExtensionPoint.PERMIT, ExtensionPoint.POST_BIND}),
}
CATALOG = {**in_tree_points(), **EXTRA}
DEFAULT_FILTERS = tuple(e.name for e in default_profile().enabled(FILTER))


def implementing(point: ExtensionPoint) -> list[str]:
    return sorted(name for name, points in CATALOG.items() if points and point in points)


@st.composite
def profiles(draw: st.DrawFn) -> Profile:
    plugins: dict[ExtensionPoint, tuple[PluginEntry, ...]] = {QUEUE_SORT: (PluginEntry("PrioritySort"),)}
    for point in ExtensionPoint:
        if point is QUEUE_SORT:
            continue
        order = draw(st.permutations(implementing(point)))
        chosen = order[: draw(st.integers(0, len(order)))]
        weights = [draw(st.integers(1, 10)) if point is SCORE else 1 for _ in chosen]
        if chosen:
            plugins[point] = tuple(PluginEntry(n, w) for n, w in zip(chosen, weights, strict=True))
    name = draw(st.sampled_from(["default-scheduler", "batch", "tenant-a"]))
    return Profile(scheduler_name=name, plugins=MappingProxyType(plugins))


@settings.get_profile("config-dev")
@given(profiles())
def test_any_profile_written_loads_back_equal(profile: Profile) -> None:
    configuration = SchedulerConfiguration(profiles=(profile,))
    assert parse(configuration_to_yaml(configuration), catalog=EXTRA) == configuration


@settings.get_profile("config-dev")
@given(
    disabled=st.sets(st.sampled_from(DEFAULT_FILTERS)),
    restated=st.lists(st.sampled_from(DEFAULT_FILTERS), unique=True),
    extra=st.lists(st.sampled_from(["Tenant"]), unique=True),
)
def test_the_merge_keeps_order_removes_the_disabled_and_appends_the_rest(
    disabled: set[str], restated: list[str], extra: list[str]
) -> None:
    enabled: list[dict[str, Any]] = [{"name": n} for n in [*restated, *extra]]
    doc = with_plugins(filter={"disabled": [{"name": n} for n in sorted(disabled)], "enabled": enabled})
    got = [e.name for e in parse(doc, catalog=EXTRA).profiles[0].enabled(FILTER)]
    kept = [n for n in DEFAULT_FILTERS if n not in disabled]
    # A disabled default that is enabled again moves after the kept defaults (kube-scheduler's rule).
    moved = [n for n in restated if n in disabled]
    assert got == [*kept, *moved, *extra]
    assert len(got) == len(set(got))
