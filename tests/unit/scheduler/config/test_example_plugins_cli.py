"""``fleetsched simulate --config`` with the example out-of-tree plugin package (installed into the
test venv by hack/test.sh, found through its real entry points): placement by the tenant filter and
the weighted cost score, ``--explain`` showing each, and every way a plugin can fail, named."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.cli import main

from .distributions import BROKEN, install

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = ROOT / "examples" / "plugins"
FLEET = str(EXAMPLES / "fleet.yaml")
CONFIG = str(EXAMPLES / "cost-tenant-config.yaml")
TENANT = "tenant.example.com/name"


def simulate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def write_profile(tmp_path: Path, **profile: Any) -> str:
    doc = {
        "apiVersion": "config.fleetsched.io/v1alpha1",
        "kind": "SchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", **profile}],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def placements(out: str) -> dict[str, dict[str, int]]:
    return {
        b["metadata"]["name"]: {t["name"]: t["replicas"] for t in b["spec"].get("clusters") or []}
        for b in json.loads(out)["items"]
    }


FLAKY_PLUGINS = {
    "filter": {"enabled": [{"name": "ExampleTenant"}, {"name": "ExampleFlaky"}]},
    "score": {"enabled": [{"name": "ExampleCost", "weight": 2}]},
}
FLAKY_ARGS = [
    {"name": "ExampleFlaky", "args": {"failAt": "Filter", "message": "tenant directory unreachable"}}
]


def test_placement_follows_the_tenant_filter_and_the_cost_labels(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = simulate(capsys, "--config", CONFIG, FLEET, "-o", "json")
    assert code == 0
    assert placements(out) == {"web-deployment": {"shop-spot": 3}, "report-deployment": {"analytics-1": 2}}
    # Karmada's profile, same fleet: the most available cluster, whoever's tenant it is.
    code, out, _ = simulate(capsys, FLEET, "-o", "json")
    assert code == 0
    assert placements(out) == {"web-deployment": {"shop-large": 3}, "report-deployment": {"shop-large": 2}}


def test_explain_shows_raw_normalised_and_weighted_scores_and_the_rejections(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = simulate(capsys, "--config", CONFIG, FLEET, "--explain")
    assert code == 0
    web = out.split("\n\n")[0]
    assert "filter: 3 feasible, 1 rejected" in web
    assert f"x analytics-1: ExampleTenant: cluster(s) not labelled {TENANT}=shop" in web
    karmada = "ClusterAffinity=0, ClusterLocality=0"
    assert f"shop-spot: score=200 ({karmada}, ExampleCost=300->100 x2=200)" in web
    assert f"shop-standard: score=132 ({karmada}, ExampleCost=500->66 x2=132)" in web
    assert f"shop-large: score=0 ({karmada}, ExampleCost=900->0 x2=0)" in web
    assert "selected: shop-spot" in web


def test_a_raising_plugin_fails_each_binding_naming_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = write_profile(tmp_path, plugins=FLAKY_PLUGINS, pluginConfig=FLAKY_ARGS)
    code, out, _ = simulate(capsys, "--config", config, FLEET, "--explain")
    assert code == 0  # the run goes on: a plugin never stops the process
    message = "plugin ExampleFlaky failed at Filter: InjectedFailure: tenant directory unreachable"
    assert out.count(f"=> Scheduled=False reason=SchedulerError: {message}") == 2
    assert "spec.clusters: <none>" in out


def test_an_ignorable_raising_plugin_is_skipped_and_the_explanation_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = write_profile(
        tmp_path, plugins=FLAKY_PLUGINS, pluginConfig=FLAKY_ARGS, ignorablePlugins=["ExampleFlaky"]
    )
    code, out, _ = simulate(capsys, "--config", config, FLEET, "--explain")
    assert code == 0
    skipped = "skipped (ignorable) ExampleFlaky at Filter: InjectedFailure: tenant directory unreachable"
    assert out.count(skipped) == 2
    assert out.count("=> Scheduled=True reason=Success") == 2
    assert "spec.clusters: shop-spot:3" in out and "spec.clusters: analytics-1:2" in out


@pytest.mark.parametrize(
    ("plugin", "args", "error"),
    [
        (
            "ExampleCost",
            {"defaultScore": 250},
            "profiles[default-scheduler].pluginConfig[ExampleCost].args: "
            "defaultScore: must be an integer in 0..100, got 250",
        ),
        (
            "ExampleTenant",
            {"labelKey": ""},
            "profiles[default-scheduler].pluginConfig[ExampleTenant].args: "
            "labelKey: must be a non-empty label key, got ''",
        ),
        (
            "ExampleTenant",
            {"key": "owner"},
            '{config} (line 12, column 7): strict decoding error: unknown field '
            '"profiles[0].pluginConfig[0].args.key" (known: labelKey)',
        ),
    ],
)
def test_invalid_args_are_a_one_line_refusal_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, plugin: str, args: dict[str, Any], error: str
) -> None:
    point = "score" if plugin == "ExampleCost" else "filter"
    plugins = {point: {"enabled": [{"name": plugin}]}}
    config = write_profile(tmp_path, plugins=plugins, pluginConfig=[{"name": plugin, "args": args}])
    code, out, err = simulate(capsys, "--config", config, FLEET)
    assert (code, out) == (2, "")
    assert err == f"fleetsched simulate: {error.format(config=config)}\n"


@pytest.fixture
def broken_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A distribution whose plugin module fails to import, installed on sys.path as pip would."""
    site = install(
        tmp_path / "site",
        "fleetsched-broken-plugin",
        modules={"fleetsched_broken_plugin": BROKEN},
        entry_points={"ExampleBroken": "fleetsched_broken_plugin:new"},
    )
    monkeypatch.syspath_prepend(str(site))
    yield site


def test_a_plugin_that_fails_to_import_is_a_one_line_refusal_naming_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, broken_site: Path
) -> None:
    config = write_profile(tmp_path, plugins={"filter": {"enabled": [{"name": "ExampleBroken"}]}})
    code, out, err = simulate(capsys, "--config", config, FLEET)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith(
        "fleetsched simulate: plugin 'ExampleBroken' (entry point 'fleetsched_broken_plugin:new' of "
        "distribution 'fleetsched-broken-plugin'): failed to import: ModuleNotFoundError:"
    )
    assert "fleetsched_this_module_does_not_exist" in err
    # Installed but enabled nowhere, it is never imported: the example profile still runs.
    code, _, _ = simulate(capsys, "--config", CONFIG, FLEET)
    assert code == 0
