"""The recorded estimator cases (../shared/estimator-conformance) answered by ``fleetsched estimate``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import recorded

ROOT = Path(__file__).resolve().parents[2]
SUITE = recorded.suite("estimator-conformance")
pytestmark = pytest.mark.recorded("estimator-conformance")
CLI = ROOT / ".venv" / "bin" / "fleetsched"


def _check(*dirs: Path) -> subprocess.CompletedProcess[str]:
    cli = str(CLI) if CLI.exists() else f"{sys.executable} -m fleetsched"
    return subprocess.run(
        [sys.executable, str(SUITE / "check.py"), "--cli", f"{cli} estimate", "-j", "2", *map(str, dirs)],
        capture_output=True, text=True, timeout=1200, check=False)


def test_every_recorded_case_passes() -> None:
    result = _check(SUITE / "cases")
    summary = result.stdout.strip().splitlines()[-1]
    assert result.returncode == 0, result.stdout + result.stderr
    passed = int(summary.split()[0])
    assert passed == len(list((SUITE / "cases").glob("*.expect.yaml")))
    assert summary.endswith(" 0 failed")


def test_the_5000_node_snapshots_pass() -> None:
    result = _check(SUITE / "perf")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == "2 passed, 0 failed"
