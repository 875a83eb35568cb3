"""docs/cli.md is what hack/gen_cli_docs.py writes from the real parsers: it lists every command
and flag ``fleetsched`` accepts, and nothing else."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from fleetsched import cli

ROOT = Path(__file__).resolve().parents[2]


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "hack" / "gen_cli_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_cli_docs", module)
    spec.loader.exec_module(module)
    return module


def test_docs_cli_md_is_up_to_date() -> None:
    written = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert written == generator().render(), "docs/cli.md drifted: run .venv/bin/python hack/gen_cli_docs.py"


def test_every_flag_of_every_command_is_documented() -> None:
    gen = generator()
    text = gen.render()
    for name in cli.COMMANDS:
        assert f"\n## fleetsched {name}\n" in text
        for action in gen.command_parser(name)._actions:
            for option in action.option_strings:
                if not isinstance(action, argparse._HelpAction):
                    assert f"`{option}`" in text, f"fleetsched {name} {option}"


def test_a_flag_the_program_does_not_have_is_not_documented() -> None:
    text = generator().render()
    section = text.split("\n## fleetsched scheduler\n")[1].split("\n## ")[0]
    documented = {cell.strip("`") for line in section.splitlines() if line.startswith("| `--")
                  for cell in line.split("|")[1].split()[0:1]}
    accepted = {o for a in generator().command_parser("scheduler")._actions for o in a.option_strings}
    assert documented and documented <= accepted
