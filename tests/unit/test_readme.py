"""The outputs README and docs/ show for the shipped example are what the program prints today."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_block(after: str) -> str:
    """The first fenced block following the text ``after`` in README.md."""
    text = (ROOT / "README.md").read_text()
    start = text.index(after)
    match = re.search(r"```\n(.*?)```", text[start:], re.S)
    assert match, f"no code block after {after!r}"
    return match[1]


def simulate(*extra: str) -> str:
    done = subprocess.run([sys.executable, "-m", "fleetsched", "simulate", "examples/fleet.yaml",
                           "examples/policies.yaml", *extra], capture_output=True, text=True, cwd=ROOT,
                          check=True)
    return done.stdout


def test_the_quick_start_table_is_what_make_simulate_prints() -> None:
    assert readme_block("`make simulate` schedules") == simulate()


def test_the_explain_example_is_what_explain_prints() -> None:
    text = (ROOT / "docs" / "simulate.md").read_text()
    after = text[text.index("For `checkout`") :]
    block = re.search(r"```console\n\$ [^\n]*--explain\n(.*?)…\n```", after, re.S)
    assert block, "no --explain example after 'For `checkout`'"
    shown = block[1]
    explained = simulate("--explain")
    first = explained.split("\n\n")[0] + "\n"
    assert shown == first


def test_the_metrics_table_lists_what_the_scheduler_exports() -> None:
    text = (ROOT / "docs" / "monitoring.md").read_text()
    section = text[text.index("## The scheduler's series") :]
    section = section[: section.index("\n## ")]
    listed = set(re.findall(r"^\| `([a-z0-9_]+)` \|", section, re.M))
    # What a scheduler process registers: import only its command module, in a fresh interpreter.
    families = subprocess.run(
        [sys.executable, "-c", "import fleetsched.controller.scheduler.command\n"
         "from fleetsched.controller.runtime.metrics import REGISTRY\n"
         "print('\\n'.join(f.name for f in REGISTRY.collect()))"],
        capture_output=True, text=True, cwd=ROOT, check=True,
    ).stdout.split()
    exported = {name for name in families if not name.startswith(("process_", "python_"))}
    # prometheus_client names counter families without their _total suffix
    assert {name.removesuffix("_total") for name in listed} == exported
