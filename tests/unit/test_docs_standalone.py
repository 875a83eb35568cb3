"""The docs stand alone and name what the code names: no link in README.md, docs/ or the examples'
READMEs leaves the repository or points at a file or heading that is not there; the configuration
fields the prose names are spelled as the file spells them (not as the Python attributes behind
them); every SchedulerConfiguration shown parses; the example plugins' args tables list real args;
and the `fleetsched estimate` example of docs/simulate.md prints what it shows."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

import fleetsched.plugin as plugin_api
from fleetsched.scheduler.config import v1alpha1
from fleetsched.scheduler.config.load import parse_configuration
from fleetsched.scheduler.framework.profile import Profile

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "examples").rglob("README.md"),
     *(ROOT / "manifests").rglob("README.md")]
)
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
INLINE = re.compile(r"`([^`\n]+)`")
# A relative path going up: ``../`` starting a path segment (not the end of ``/tmp/x-.../y``).
UP = re.compile(r"(?<![\w./-])(?:\.\./)+[\w./-]*")


def prose(path: Path) -> str:
    """The file without its fenced blocks (their text is example input, not links)."""
    return FENCE.sub("", path.read_text())


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(m[1]) for m in re.finditer(r"^#+\s+(.*)$", prose(path), re.M)}


def inside(root: Path, target: Path) -> bool:
    return target.resolve().is_relative_to(root.resolve())


def link_problems(path: Path, root: Path = ROOT) -> list[str]:
    problems = []
    text = prose(path)
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not a file of the repository
            continue
        file_part, _, fragment = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not inside(root, resolved):
            problems.append(f"{path.name}: link {target!r} leaves the repository")
        elif not resolved.exists():
            problems.append(f"{path.name}: link {target!r}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            problems.append(f"{path.name}: link {target!r}: no heading #{fragment} in {resolved.name}")
    for code in INLINE.findall(text):
        # A path in code is a command's argument or a file named for the reader, both relative to the
        # repository's root (where the README's commands run): ``../`` leaves it. A YAML snippet
        # (``resources: [../manifests]``) is relative to the file it belongs in, not a path to follow.
        if ": " in code:
            continue
        for found in re.findall(UP, code):
            if not inside(root, root / found):
                problems.append(f"{path.name}: path {found!r} leaves the repository")
    for block in FENCE.findall(path.read_text()):
        # A block's commands run from the root; a block that names its file first (``# dir/file.yaml``)
        # is that file, and its paths are relative to it.
        lines = block.splitlines()[1:]
        named = re.match(r"#\s*([\w.-]+(?:/[\w.-]+)+)\s*$", lines[0]) if lines else None
        base = (root / named[1]).parent if named else root
        for found in re.findall(UP, block):
            if not inside(root, base / found):
                problems.append(f"{path.name}: path {found!r} in a code block leaves the repository")
    return problems


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_link_leaves_the_repository_or_points_nowhere(path: Path) -> None:
    assert link_problems(path) == []


def test_the_link_check_finds_each_kind_of_bad_link(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "a.md").write_text("# A\n\n## Real heading\n")
    page = repo / "README.md"
    page.write_text(
        "[ok](docs/a.md#real-heading) [web](https://example.com/x) [self](#top)\n"
        "[out](../shared/design.md) [gone](docs/b.md) [anchor](docs/a.md#nope)\n"
        "see `../shared/conformance`, `python ../x/check.py --cli y` and `docs/a.md`\n"
        "(`resources: [../m]`)\n\n# Top\n\n```\n[in a block](../x.md)\n```\n"
        "```yaml\n# my-install/kustomization.yaml\nresources: [../manifests]\n```\n"
        "```sh\nexport KUBECONFIG=/tmp/dev-.../controlplane/kubeconfig\n```\n"
    )
    assert link_problems(page, repo) == [
        "README.md: link '../shared/design.md' leaves the repository",
        "README.md: link 'docs/b.md': no such file",
        "README.md: link 'docs/a.md#nope': no heading #nope in a.md",
        "README.md: path '../shared/conformance' leaves the repository",
        "README.md: path '../x/check.py' leaves the repository",
        "README.md: path '../x.md' in a code block leaves the repository",
    ]


def file_fields(model: type[BaseModel] = v1alpha1.SchedulerConfigurationModel) -> dict[str, str]:
    """Every field of the configuration file: its Python name -> its name in the file."""
    out: dict[str, str] = {}
    for name, info in model.model_fields.items():
        out[name] = info.alias or name
        for arg in getattr(info.annotation, "__args__", (info.annotation,)):
            for inner in (arg, *getattr(arg, "__args__", ())):
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    out.update(file_fields(inner))
    return out


def python_spellings() -> dict[str, str]:
    """Names the docs might use for a file field by mistake: the models' snake_case names and the
    resolved Profile's attributes (``plugin_timeout_seconds`` is ``pluginTimeout`` in the file)."""
    # The plugin methods share their names with the file's extension points (``pre_score`` the
    # method, ``preScore`` the plugin set): in the plugin API's prose they are the methods.
    methods = {name for cls in vars(plugin_api).values() if isinstance(cls, type) for name in dir(cls)}
    fields = {k: v for k, v in file_fields().items() if k != v and k not in methods}
    renamed = {"plugin_timeout_seconds": "pluginTimeout", "plugin_args": "pluginConfig"}
    for attribute in (f.name for f in dataclasses.fields(Profile)):
        camel = re.sub(r"_(\w)", lambda m: m[1].upper(), attribute)
        if "_" in attribute and (camel in fields.values() or attribute in renamed):
            fields[attribute] = renamed.get(attribute, camel)
    return fields


def test_the_docs_spell_configuration_fields_as_the_file_does() -> None:
    wrong = python_spellings()
    assert wrong["plugin_timeout_seconds"] == "pluginTimeout"  # the mistake this test was written for
    assert wrong["ignorable_plugins"] == "ignorablePlugins"
    found = [
        f"{path.relative_to(ROOT)}: `{token}` is `{wrong[token]}` in the configuration file"
        for path in DOCS
        for token in INLINE.findall(prose(path))
        if token in wrong
    ]
    assert found == []


def configuration_blocks() -> list[tuple[str, str]]:
    blocks = []
    for path in DOCS:
        for block in re.findall(r"```ya?ml\n(.*?)```", path.read_text(), re.S):
            if "kind: SchedulerConfiguration" in block:
                blocks.append((str(path.relative_to(ROOT)), block))
    return blocks


def test_every_configuration_shown_parses_with_the_fields_it_names() -> None:
    shown = configuration_blocks()
    assert len(shown) >= 3
    for where, block in shown:
        parse_configuration(block, source=where)  # unknown or misspelt fields are refused


def test_the_example_plugins_args_tables_list_real_args() -> None:
    readme = (ROOT / "examples" / "plugins" / "fleetsched-example-plugins" / "README.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| [^|]+ \| (.*) \|$", readme, re.M)
    plugins = {ep.name: ep for ep in importlib.metadata.entry_points(group="fleetsched.plugins")}
    assert {name for name, _ in rows} <= set(plugins)
    assert len(rows) >= 4
    for name, args in rows:
        model = getattr(plugins[name].load(), "args_model", None)
        declared = {f.name for f in dataclasses.fields(model)} if model is not None else set()
        named = set(re.findall(r"`(\w+)` \(", args)) | set(re.findall(r"`(\w+)`(?:,|$)", args))
        named -= {"Filter", "Score"}
        assert named <= declared, f"{name}: {sorted(named - declared)} are not args of {model}"


def test_the_estimate_example_prints_what_the_readme_shows() -> None:
    text = (ROOT / "docs" / "simulate.md").read_text()
    section = text[text.index("## Estimating offline: `fleetsched estimate`"):]
    block = re.search(r"```console\n\$ (.*?)\n(.*?)```", section, re.S)
    assert block is not None
    argv = shlex.split(block[1])
    assert argv[:2] == ["fleetsched", "estimate"]
    done = subprocess.run([sys.executable, "-m", "fleetsched", *argv[1:]], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert done.stdout == block[2]
