"""Out-of-tree plugins through the entry-point group ``fleetsched.plugins``, from real dist-info
directories on ``sys.path`` (what an installed wheel leaves behind), not mocks."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from fleetsched.scheduler.config import ExtensionPoint, PluginEntry, PluginLoadError, parse_configuration
from fleetsched.scheduler.config import plugins as out_of_tree
from fleetsched.scheduler.framework.defaults import in_tree_points

from .distributions import BROKEN, COST_SCORE, TENANT_FILTER, install
from .helpers import with_plugins

SCORE, FILTER = ExtensionPoint.SCORE, ExtensionPoint.FILTER


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh directory on sys.path; the modules imported from it are forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("fleetsched_example"):
            del sys.modules[name]


def load(doc: dict[str, object]) -> object:
    return parse_configuration(yaml.safe_dump(doc), source="c.yaml")


def test_discovery_lists_the_entry_points_without_importing_them(site: Path) -> None:
    install(
        site,
        "fleetsched-example-cost",
        modules={"fleetsched_example_cost": COST_SCORE},
        entry_points={"CostScore": "fleetsched_example_cost:CostScore"},
    )
    found = out_of_tree.discover(in_tree=in_tree_points())
    assert found["CostScore"].distribution == "fleetsched-example-cost"
    assert found["CostScore"].value == "fleetsched_example_cost:CostScore"
    assert "fleetsched_example_cost" not in sys.modules


def test_a_profile_enabling_the_plugin_loads_it_with_its_points(site: Path) -> None:
    install(
        site,
        "fleetsched-example-cost",
        modules={"fleetsched_example_cost": COST_SCORE},
        entry_points={"CostScore": "fleetsched_example_cost:CostScore"},
    )
    loaded = load(with_plugins(score={"enabled": [{"name": "CostScore", "weight": 2}]}))
    factory = loaded.out_of_tree["CostScore"]  # type: ignore[attr-defined]
    assert factory.__module__ == "fleetsched_example_cost" and factory.__name__ == "CostScore"
    profile = loaded.configuration.profiles[0]  # type: ignore[attr-defined]
    assert profile.enabled(SCORE)[-1] == PluginEntry("CostScore", 2)
    assert out_of_tree.extension_points_of(factory) == frozenset({SCORE})


def test_an_installed_plugin_no_profile_enables_is_not_imported(site: Path) -> None:
    install(
        site,
        "fleetsched-example-broken",
        modules={"fleetsched_example_broken": BROKEN},
        entry_points={"Broken": "fleetsched_example_broken:Factory"},
    )
    loaded = load(with_plugins())
    assert dict(loaded.out_of_tree) == {}  # type: ignore[attr-defined]
    assert "fleetsched_example_broken" not in sys.modules


def test_a_plugin_that_fails_to_import_is_named(site: Path) -> None:
    install(
        site,
        "fleetsched-example-broken",
        modules={"fleetsched_example_broken": BROKEN},
        entry_points={"Broken": "fleetsched_example_broken:Factory"},
    )
    with pytest.raises(PluginLoadError) as caught:
        load(with_plugins(filter={"enabled": [{"name": "Broken"}]}))
    assert str(caught.value) == (
        "plugin 'Broken' (entry point 'fleetsched_example_broken:Factory' of distribution "
        "'fleetsched-example-broken'): failed to import: ModuleNotFoundError: No module named "
        "'fleetsched_this_module_does_not_exist'"
    )


def test_an_entry_point_naming_nothing_callable_is_refused(site: Path) -> None:
    install(
        site,
        "fleetsched-example-cost",
        modules={"fleetsched_example_cost": COST_SCORE + "\nVALUE = 3\n"},
        entry_points={"CostScore": "fleetsched_example_cost:VALUE"},
    )
    with pytest.raises(PluginLoadError, match=r"plugin 'CostScore' .*: is not callable"):
        load(with_plugins(score={"enabled": [{"name": "CostScore"}]}))


def test_a_name_an_in_tree_plugin_has_is_refused(site: Path) -> None:
    install(
        site,
        "fleetsched-example-clash",
        modules={"fleetsched_example_clash": COST_SCORE},
        entry_points={"TaintToleration": "fleetsched_example_clash:CostScore"},
    )
    with pytest.raises(PluginLoadError) as caught:
        load(with_plugins())
    assert str(caught.value) == (
        "plugin 'TaintToleration' (entry point 'fleetsched_example_clash:CostScore' of distribution "
        "'fleetsched-example-clash'): the name of an in-tree plugin; rename the entry point"
    )


def test_a_gated_in_tree_name_is_still_reserved(site: Path) -> None:
    install(
        site,
        "fleetsched-example-clash",
        modules={"fleetsched_example_clash": COST_SCORE},
        entry_points={"WorkloadAffinity": "fleetsched_example_clash:CostScore"},
    )
    with pytest.raises(PluginLoadError, match="the name of an in-tree plugin"):
        load(with_plugins())


def test_two_distributions_with_one_name_are_refused(site: Path) -> None:
    install(
        site / "a",
        "fleetsched-example-cost",
        modules={"fleetsched_example_cost": COST_SCORE},
        entry_points={"CostScore": "fleetsched_example_cost:CostScore"},
    )
    install(
        site / "b",
        "fleetsched-example-other",
        modules={"fleetsched_example_other": COST_SCORE},
        entry_points={"CostScore": "fleetsched_example_other:CostScore"},
    )
    sys.path[:0] = [str(site / "a"), str(site / "b")]
    try:
        with pytest.raises(PluginLoadError, match="also provides a plugin of that name"):
            load(with_plugins())
    finally:
        del sys.path[:2]


def test_a_function_factory_can_be_enabled_at_named_points_only(site: Path) -> None:
    install(
        site,
        "fleetsched-example-tenant",
        modules={"fleetsched_example_tenant": TENANT_FILTER},
        entry_points={
            "TenantFilter": "fleetsched_example_tenant:build",
            "TenantClass": "fleetsched_example_tenant:TenantFilter",
        },
    )
    loaded = load(
        with_plugins(
            filter={"enabled": [{"name": "TenantFilter"}]}, multiPoint={"enabled": [{"name": "TenantClass"}]}
        )
    )
    profile = loaded.configuration.profiles[0]  # type: ignore[attr-defined]
    assert [e.name for e in profile.enabled(FILTER)][-2:] == ["TenantClass", "TenantFilter"]
    assert [e.name for e in profile.enabled(SCORE)][-1] == "TenantClass"
    assert out_of_tree.extension_points_of(loaded.out_of_tree["TenantFilter"]) is None  # type: ignore[attr-defined]


def test_an_enabled_name_no_distribution_provides_is_an_unknown_plugin(site: Path) -> None:
    from fleetsched.scheduler.config import ConfigError

    with pytest.raises(
        ConfigError, match=r"profiles\[0\]\.plugins\.score\.enabled\[0\]\.name: unknown plugin 'Nope'"
    ):
        load(with_plugins(score={"enabled": [{"name": "Nope"}]}))


def test_the_runtime_can_say_which_points_a_factory_implements(site: Path) -> None:
    install(site, "fleetsched-example-tenant", modules={"fleetsched_example_tenant": TENANT_FILTER},
            entry_points={"TenantFilter": "fleetsched_example_tenant:build"})
    doc = with_plugins(multiPoint={"enabled": [{"name": "TenantFilter"}]})
    loaded = parse_configuration(yaml.safe_dump(doc), points_of=lambda factory: frozenset({FILTER}))
    profile = loaded.configuration.profiles[0]
    assert [e.name for e in profile.enabled(FILTER)][-1] == "TenantFilter"
    assert "TenantFilter" not in [e.name for e in profile.enabled(SCORE)]


def test_an_installed_plugin_may_be_disabled_without_being_imported(site: Path) -> None:
    install(site, "fleetsched-example-broken", modules={"fleetsched_example_broken": BROKEN},
            entry_points={"Broken": "fleetsched_example_broken:Factory"})
    loaded = load(with_plugins(multiPoint={"disabled": [{"name": "Broken"}]}))
    assert loaded.configuration.profiles[0].enabled(FILTER)  # type: ignore[attr-defined]
    assert "fleetsched_example_broken" not in sys.modules
