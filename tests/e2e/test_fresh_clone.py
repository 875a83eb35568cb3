"""A clone of the repository with nothing beside it passes its own unit tier.

``git clone`` of the committed HEAD into an empty temporary directory (no ../shared there), then the unit
tier runs in it with this virtualenv's Python (the clone's code first on PYTHONPATH, nothing installed
again). The tests that read a recorded suite from ../shared must be reported as skipped, each with the
line naming what is missing, and everything else must pass.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support import recorded


def test_a_clone_with_nothing_beside_it_collects_and_skips_what_it_lacks(tmp_path: Path) -> None:
    """The whole suite collects in the clone (it stopped at collection with four errors), and the files
    that read recorded suites pass there with those tests skipped, each with the line saying what is
    missing (the unit tier as a whole runs in every CI run already, beside ../shared)."""
    clone = tmp_path / "fleetsched"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(recorded.ROOT), str(clone)],
                   check=True, capture_output=True, text=True, timeout=300)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleetsched"]  # nothing beside the clone
    env = {key: value for key, value in os.environ.items() if key not in ("CI", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(clone)
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly"]
    collected = subprocess.run([*base, "tests", "--collect-only", "-q"], cwd=clone, env=env,
                               capture_output=True, text=True, timeout=900, check=False)
    out = collected.stdout + collected.stderr
    assert collected.returncode == 0, out[-6000:]
    assert re.search(r"^\d+ tests collected", out, re.M) and " error" not in out.splitlines()[-1], out[-3000:]
    result = subprocess.run(
        [*base, "tests/unit/webhook/test_recorded_cases.py", "tests/unit/api/test_load.py",
         "tests/unit/test_simulate.py", "-q", "-rs"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=1800, check=False,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    skips = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    assert any("recorded suite conformance not found" in line for line in skips), "\n".join(skips)
    assert any("recorded suite webhook-conformance not found" in line for line in skips), "\n".join(skips)
    assert re.search(r"\d+ passed, \d+ skipped", out), out[-3000:]


def test_ci_fails_rather_than_skips_when_the_suites_are_missing(tmp_path: Path) -> None:
    clone = tmp_path / "fleetsched"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(recorded.ROOT), str(clone)],
                   check=True, capture_output=True, text=True, timeout=300)
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_ADDOPTS"}
    env |= {"CI": "true", "PYTHONPATH": str(clone)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/unit/webhook/test_recorded_cases.py", "-q",
         "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 1, out[-3000:]
    assert "CI=true and recorded suite webhook-conformance not found" in out, out[-3000:]
