"""TEMPORARY with ``config/interim.py``: until the framework runtime lands, a profile runs as the
``--plugins`` selection it equals, and any other profile is refused by name."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from fleetsched.scheduler.config import ExtenderConfig, ExtensionPoint, PluginEntry, Profile, default_profile
from fleetsched.scheduler.config.interim import UnsupportedProfile, settings_for
from fleetsched.scheduler.pipeline import Scheduler, Settings

FILTER, SCORE = ExtensionPoint.FILTER, ExtensionPoint.SCORE


@pytest.mark.parametrize("flag", ["*", "", "*,-ClusterAffinity", "TaintToleration", "*,-ClusterLocality"])
def test_a_flag_profile_runs_as_that_flag(flag: str) -> None:
    settings = settings_for(default_profile(flag), base=Settings(enable_empty_workload_propagation=True))
    assert settings.enable_empty_workload_propagation
    expected = Scheduler(settings=Settings(plugins=flag))
    got = Scheduler(settings=settings)
    assert [p.name for p in got.filters] == [p.name for p in expected.filters]
    assert [p.name for p in got.scorers] == [p.name for p in expected.scorers]


def with_point(point: ExtensionPoint, entries: tuple[PluginEntry, ...], **fields: object) -> Profile:
    plugins = dict(default_profile().plugins)
    plugins[point] = entries
    return Profile(scheduler_name="p", plugins=MappingProxyType(plugins), **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        pytest.param(
            with_point(SCORE, (PluginEntry("ClusterAffinity", 2), PluginEntry("ClusterLocality"))),
            "profile 'p': score: only the in-tree plugins",
            id="a weight",
        ),
        pytest.param(
            with_point(FILTER, (PluginEntry("TaintToleration"), PluginEntry("APIEnablement"))),
            "profile 'p': filter: only the in-tree plugins",
            id="another order",
        ),
        pytest.param(
            with_point(SCORE, (PluginEntry("ClusterLocality"),)),
            "profile 'p': score: only the in-tree plugins",
            id="ClusterAffinity filters but does not score",
        ),
        pytest.param(
            with_point(SCORE, (PluginEntry("CostScore"),)),
            "profile 'p': out-of-tree plugin 'CostScore' needs the framework runtime",
            id="out of tree",
        ),
        pytest.param(
            with_point(SCORE, default_profile().enabled(SCORE), plugin_args={"ClusterLocality": {}}),
            "profile 'p': pluginConfig needs the framework runtime",
            id="args",
        ),
        pytest.param(
            with_point(SCORE, default_profile().enabled(SCORE), extenders=(ExtenderConfig("https://e/"),)),
            "profile 'p': extenders needs the framework runtime",
            id="extenders",
        ),
    ],
)
def test_what_todays_scheduler_cannot_run_is_refused(profile: Profile, message: str) -> None:
    with pytest.raises(UnsupportedProfile) as caught:
        settings_for(profile, base=Settings())
    assert str(caught.value).startswith(message)
