"""Every command README.md and docs/ show works as written on the shipped examples.

Offline commands (``fleetsched simulate``, ``estimate``, ``config`` with the repository's files) run
here and print what the page shows, where it shows it. Commands that need a cluster cannot run in
the unit tier (docs/live.md's run in tests/e2e/test_doc_commands_live.py, dev-up's walk-through in
tests/e2e/test_dev_up.py); for every command shown, the flags are flags of its fleetsched command,
the repository files it names exist, and the bindings and workloads it names are the examples'."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from functools import cache

import pytest

from fleetsched import cli
from tests.support.doc_commands import ROOT, Command, commands

ALL = commands()
OFFLINE = [c for c in ALL if c.runs_offline]
FLEETSCHED = [c for c in ALL if c.fleetsched and c.fleetsched[0] in cli.COMMANDS]
REPO_PATH = re.compile(r"^(?:examples|manifests|charts|crds|hack|docs|bench)/[\w./-]*$")


def ids(command: Command) -> str:
    return f"{command.where} {command.text}"


@cache
def options(name: str) -> frozenset[str]:
    parser = cli.build_parser([name])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return frozenset(o for action in sub.choices[name]._actions for o in action.option_strings)


@cache
def example_objects() -> frozenset[tuple[str, str, str]]:
    """(kind, namespace, name) of the examples' bindings and workloads, as simulate derives them."""
    done = subprocess.run(
        [sys.executable, "-m", "fleetsched", "simulate", "examples/fleet.yaml", "examples/policies.yaml",
         "-o", "json"], capture_output=True, text=True, cwd=ROOT, check=True,
    )
    out = set()
    for binding in json.loads(done.stdout)["items"]:
        meta, resource = binding["metadata"], binding["spec"]["resource"]
        kind = "rb" if binding["kind"] == "ResourceBinding" else "crb"
        out.add((kind, meta.get("namespace", ""), meta["name"]))
        out.add((resource["kind"].lower(), resource.get("namespace", ""), resource["name"]))
    return frozenset(out)


def test_the_pages_show_offline_commands_and_live_ones() -> None:
    assert len(OFFLINE) >= 8, [c.where for c in OFFLINE]
    assert any(c.output for c in OFFLINE)
    shown = {c.fleetsched[0] for c in FLEETSCHED if c.fleetsched}
    assert shown >= {"simulate", "explain", "what-if", "estimate"}


@pytest.mark.parametrize("command", OFFLINE, ids=ids)
def test_an_offline_command_runs_and_prints_what_the_page_shows(command: Command) -> None:
    args = command.fleetsched
    assert args is not None
    done = subprocess.run([sys.executable, "-m", "fleetsched", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, f"{command.where}: {command.text}\n{done.stderr}"
    if command.output is not None:
        printed = done.stdout[: len(command.output)] if command.prefix else done.stdout
        assert printed == command.output, f"{command.where}: `{command.text}` prints\n{done.stdout}"


@pytest.mark.parametrize("command", FLEETSCHED, ids=ids)
def test_the_flags_shown_are_the_commands_flags(command: Command) -> None:
    args = command.fleetsched
    assert args is not None
    flags = {word.split("=", 1)[0] for word in args[1:] if re.match(r"^--?[a-z]", word)}
    unknown = flags - options(args[0]) - {"-"}
    assert not unknown, f"{command.where}: `fleetsched {args[0]}` has no {sorted(unknown)}"


def named_objects(command: Command) -> list[tuple[str, str, str]]:
    """The bindings and workloads a command names: ``rb/NS/NAME``, ``crb/NAME``, and kubectl's
    ``get rb NAME -n NS``, ``delete deployment -n NS NAME`` and the like."""
    words = [w for w in command.argv if w != "&&"]
    found = []
    for word in words:
        parts = word.split("/")
        if parts[0] == "rb" and len(parts) == 3:
            found.append(("rb", parts[1], parts[2]))
        elif parts[0] == "crb" and len(parts) == 2:
            found.append(("crb", "", parts[1]))
    if words[:1] == ["kubectl"]:
        for verb in ("get", "delete", "scale", "describe"):
            if verb not in words:
                continue
            rest = words[words.index(verb) + 1 :]
            namespace = rest[rest.index("-n") + 1] if "-n" in rest[:-1] else ""
            positional = [
                w for i, w in enumerate(rest) if not w.startswith("-") and (i == 0 or rest[i - 1] != "-n")
            ]
            if len(positional) >= 2 and namespace:
                kind = {"rb": "rb", "resourcebinding": "rb", "deployment": "deployment"}.get(positional[0])
                if kind:
                    found.append((kind, namespace, positional[1]))
    # rb/NS/NAME, rb/… : forms to fill in, not names
    return [o for o in found if not any(re.fullmatch(r"[A-Z_]+|<[^<>]+>|…|\.\.\.", part) for part in o[1:])]


def test_named_objects_are_read_from_each_form() -> None:
    def named(text: str) -> list[tuple[str, str, str]]:
        return named_objects(Command(ROOT / "x.md", 1, text, None, False, False))

    assert named("fleetsched explain rb/shop/web-deployment") == [("rb", "shop", "web-deployment")]
    assert named("fleetsched explain crb/app-config-configmap") == [("crb", "", "app-config-configmap")]
    assert named("kubectl get rb -n shop web -o yaml") == [("rb", "shop", "web")]
    assert named("fleetsched explain rb/NS/NAME") == []
    assert named("fleetsched explain rb/<namespace>/<name>") == []
    assert named("kubectl delete deployment -n shop web && kubectl get rb -n shop") == [
        ("deployment", "shop", "web")]
    assert ("crb", "", "app-config-configmap") not in example_objects()  # the README's old example
    assert ("rb", "shop", "web") not in example_objects()  # dev-up's old walk-through
    assert ("rb", "shop", "web-deployment") in example_objects()


@pytest.mark.parametrize("command", [c for c in ALL if named_objects(c)], ids=ids)
def test_the_bindings_and_workloads_named_are_the_examples(command: Command) -> None:
    missing = [o for o in named_objects(command) if o not in example_objects()]
    assert not missing, f"{command.where}: `{command.text}` names {missing}, which the examples do not have"


@pytest.mark.parametrize("command", ALL, ids=ids)
def test_the_repository_files_named_exist(command: Command) -> None:
    named = [w.split("=", 1)[-1] for w in command.argv if REPO_PATH.match(w.split("=", 1)[-1])]
    missing = [w for w in named if not (ROOT / w).exists() and "…" not in w]
    assert not missing, f"{command.where}: `{command.text}`: no {missing} in the repository"
