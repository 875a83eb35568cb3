"""docs/extending.md's plugin walk-through is true: its plugin code behaves as the shipped example
package, its pyproject excerpt, configuration and Dockerfile are the shipped files, its
``simulate --explain`` output is what the command prints, and its image recipe's pip command really
installs the plugins with their entry points."""

from __future__ import annotations

import importlib.metadata
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.cli import main
from fleetsched.plugin import ClusterInfo, FilterContext, SchedulingBinding

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "extending.md"
PLUGINS = ROOT / "examples" / "plugins"
PACKAGE = PLUGINS / "fleetsched-example-plugins"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.S)


def test_the_plugin_code_scores_as_the_shipped_plugin() -> None:
    from fleetsched_example_plugins import cost

    namespace: dict[str, Any] = {}
    exec(blocks("python")[0], namespace)
    shown = namespace["ExampleCost"](namespace["ExampleCostArgs"](defaultScore=30))
    shipped = cost.ExampleCost(cost.ExampleCostArgs(defaultScore=30))
    assert shown.name == shipped.name and shown.cluster_inputs == shipped.cluster_inputs
    binding = SchedulingBinding(kind="ResourceBinding", name="b", namespace="n")
    ctx = FilterContext(binding, "", frozenset(), True)
    label = "cost.example.com/price-per-hour"
    fleets = (["0.9", "0.3", "0.5"], ["1", "1"], ["x", "2", None, "NaN", "7"], [None], ["0.0004", "3e1"])
    for prices in fleets:
        clusters = [ClusterInfo(f"c{i}", {} if p is None else {label: p}) for i, p in enumerate(prices)]
        raw = [shown.score(ctx, c) for c in clusters]
        assert raw == [shipped.score(ctx, c) for c in clusters]
        normalized = list(shipped.normalize_score(ctx, clusters, raw))
        assert list(shown.normalize_score(ctx, clusters, raw)) == normalized
    for bad in (250, True, "5"):
        with pytest.raises(ValueError) as doc_error:
            namespace["ExampleCostArgs"](defaultScore=bad)
        with pytest.raises(ValueError) as package_error:
            cost.ExampleCostArgs(defaultScore=bad)
        assert str(doc_error.value) == str(package_error.value)


def test_the_pyproject_excerpt_is_the_shipped_one() -> None:
    shown = tomllib.loads(blocks("toml")[0])
    shipped = tomllib.loads((PACKAGE / "pyproject.toml").read_text())
    for key, value in shown["project"].items():
        assert shipped["project"][key] == value, key
    assert shown["project"]["entry-points"] == shipped["project"]["entry-points"]
    entry_points = shipped["project"]["entry-points"]["fleetsched.plugins"]
    installed = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="fleetsched.plugins")}
    assert entry_points.items() <= installed.items()  # hack/test.sh installed this very package


def test_the_install_command_names_the_package() -> None:
    commands = [line for block in blocks("sh") for line in block.splitlines() if "pip install" in line]
    assert commands == [".venv/bin/pip install examples/plugins/fleetsched-example-plugins"]
    assert (ROOT / shlex.split(commands[0])[-1] / "pyproject.toml").is_file()


def test_the_profile_is_the_shipped_configuration() -> None:
    shown = yaml.safe_load(blocks("yaml")[0])
    assert shown == yaml.safe_load((PLUGINS / "cost-tenant-config.yaml").read_text())


def test_the_explain_output_is_what_simulate_prints(capsys: pytest.CaptureFixture[str]) -> None:
    console = blocks("console")[0]
    command, shown = console.split("\n", 1)
    argv = shlex.split(command.removeprefix("$ "))
    assert argv[0] == "fleetsched"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        assert main(argv[1:]) == 0
    printed = capsys.readouterr().out
    assert printed.split("\n\n")[0] + "\n" == shown.removesuffix("…\n")  # the first binding's story


def test_the_ignorable_profile_example_skips_the_flaky_plugin(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    profile = yaml.safe_load(blocks("yaml")[1])
    doc = {"apiVersion": "config.fleetsched.io/v1alpha1", "kind": "SchedulerConfiguration", **profile}
    config = tmp_path / "tolerant.yaml"
    config.write_text(yaml.safe_dump(doc))
    # The example fleet, its policies naming the profile's schedulerName.
    fleet = list(yaml.safe_load_all((PLUGINS / "fleet.yaml").read_text()))
    for obj in fleet:
        if obj["kind"] == "PropagationPolicy":
            obj["spec"]["schedulerName"] = profile["profiles"][0]["schedulerName"]
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(yaml.safe_dump_all(fleet))
    assert main(["simulate", "--config", str(config), str(fleet_file), "--explain"]) == 0
    out = capsys.readouterr().out
    skipped = "skipped (ignorable) ExampleFlaky at Filter: InjectedFailure: tenant directory unreachable"
    assert out.count(skipped) == 2
    assert out.count("Scheduled=True reason=Success") == 2


def test_the_dockerfile_is_the_shipped_one_and_matches_the_fleetsched_image() -> None:
    shown = blocks("dockerfile")[0]
    assert shown == (PLUGINS / "Dockerfile").read_text()
    image = (ROOT / "Dockerfile").read_text()
    arg = next(line for line in shown.splitlines() if line.startswith("ARG PYTHON_IMAGE="))
    assert arg in image.splitlines()  # the same Python as the fleetsched image
    version = re.search(r"python:(\d+\.\d+)", arg)
    assert version is not None
    assert f"/opt/fleetsched/lib/python{version[1]}/site-packages/" in shown
    assert "python -m venv /opt/fleetsched" in image
    assert "COPY --from=build /opt/fleetsched /opt/fleetsched" in image
    assert "pip uninstall --yes pip" in image  # why the recipe installs in a stage of its own


def test_the_image_recipes_pip_command_installs_the_plugins_with_their_entry_points(tmp_path: Path) -> None:
    run = next(line for line in blocks("dockerfile")[0].splitlines() if line.startswith("RUN pip install"))
    argv = shlex.split(run.removeprefix("RUN "))
    target = tmp_path / "plugins"
    argv = [str(target) if a == "/plugins" else str(PACKAGE) if a.startswith("/src/") else a for a in argv]
    subprocess.run([sys.executable, "-m", *argv, "--quiet", "--disable-pip-version-check"], check=True)
    found = {
        ep.name: ep.value
        for dist in importlib.metadata.distributions(path=[str(target)])
        for ep in dist.entry_points
        if ep.group == "fleetsched.plugins"
    }
    assert found == {
        "ExampleCost": "fleetsched_example_plugins.cost:ExampleCost",
        "ExampleTenant": "fleetsched_example_plugins.tenant:ExampleTenant",
        "ExampleFlaky": "fleetsched_example_plugins.flaky:ExampleFlaky",
        "ExampleNamespacePool": "fleetsched_example_plugins.namespace_pool:ExampleNamespacePool",
    }
    assert (target / "fleetsched_example_plugins" / "cost.py").is_file()


def test_the_readme_links_the_guide() -> None:
    assert "(docs/extending.md)" in (ROOT / "README.md").read_text()
