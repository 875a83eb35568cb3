"""``fleetsched simulate`` with a plugin that raises SystemExit or KeyboardInterrupt: before issue
23 the whole run exited 3 (or with a KeyboardInterrupt traceback); now each binding the plugin saw
fails with a condition naming the plugin and the point, and the run completes (exit 0)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ..config.distributions import install

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = [str(ROOT / "examples" / "fleet.yaml"), str(ROOT / "examples" / "policies.yaml")]

HOSTILE = '''
class Exiting:
    name = "Exiting"

    def __init__(self, args=None, handle=None):
        pass

    def filter(self, ctx, cluster):
        raise SystemExit(3)


class Interrupting:
    name = "Interrupting"

    def __init__(self, args=None, handle=None):
        pass

    def score(self, ctx, cluster):
        raise KeyboardInterrupt
'''


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize(
    ("point", "plugin", "text"),
    [
        ("filter", "Exiting", "plugin Exiting failed at Filter: SystemExit: 3"),
        ("score", "Interrupting", "plugin Interrupting failed at Score: KeyboardInterrupt"),
    ],
)
def test_simulate_survives_a_plugin_raising_system_exit_or_keyboard_interrupt(
    tmp_path: Path, jobs: str, point: str, plugin: str, text: str
) -> None:
    site = install(
        tmp_path / "site",
        "fleetsched-hostile",
        modules={"fleetsched_hostile": HOSTILE},
        entry_points={name: f"fleetsched_hostile:{name}" for name in ("Exiting", "Interrupting")},
    )
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "config.fleetsched.io/v1alpha1",
                "kind": "SchedulerConfiguration",
                "profiles": [{"plugins": {point: {"enabled": [{"name": plugin}]}}}],
            }
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "fleetsched", "simulate", "--config", str(config), "--jobs", jobs,
         "-o", "json", *EXAMPLES],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": f"{site}{os.pathsep}{ROOT}", "PATH": "/usr/bin:/bin"},
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert text in done.stdout
