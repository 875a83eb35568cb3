"""The recorded scheduling cases (../shared/conformance) run through ``fleetsched simulate``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import recorded

ROOT = Path(__file__).resolve().parents[2]
SUITE = recorded.suite("conformance")
pytestmark = pytest.mark.recorded("conformance")
CLI = ROOT / ".venv" / "bin" / "fleetsched"


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    cli = str(CLI) if CLI.exists() else f"{sys.executable} -m fleetsched"
    return subprocess.run(
        [sys.executable, str(SUITE / "check.py"), "--cli", f"{cli} simulate", "-j", "2", *args],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )


def test_every_recorded_scheduling_case_passes() -> None:
    cases = SUITE / "cases"
    assert cases.is_dir(), f"{cases} is missing: the shared conformance suite must sit beside the repository"
    result = _check(str(cases))
    summary = result.stdout.strip().splitlines()[-1]
    assert result.returncode == 0, result.stdout + result.stderr
    assert summary == f"{len(list(cases.glob('*.expect.yaml')))} passed, 0 failed"


def test_checker_notices_a_wrong_result(tmp_path: Path) -> None:
    # The checker must be able to fail: a case whose expectation disagrees with Karmada's is reported.
    source = SUITE / "cases" / "kt-static-7-2111"
    (tmp_path / "wrong.input.yaml").write_text(source.with_suffix(".input.yaml").read_text())
    expect = source.with_suffix(".expect.yaml").read_text().replace("case: kt-static-7-2111", "case: wrong")
    lines = expect.splitlines()
    # Bump the first recorded replica count by one.
    for i, line in enumerate(lines):
        if line.strip().endswith(tuple(f": {n}" for n in range(1, 10))) and line.startswith("    "):
            key, value = line.rsplit(": ", 1)
            lines[i] = f"{key}: {int(value) + 1}"
            break
    else:
        raise AssertionError("no replica count found in the expectation")
    (tmp_path / "wrong.expect.yaml").write_text("\n".join(lines) + "\n")
    result = _check(str(tmp_path))
    assert result.returncode == 1
    assert result.stdout.strip().splitlines()[-1] == "0 passed, 1 failed"


def _default_configuration(directory: Path) -> Path:
    """``fleetsched config default`` written to a file, as a user would."""
    done = subprocess.run([sys.executable, "-m", "fleetsched", "config", "default"], capture_output=True,
                          text=True, check=True, timeout=120)
    path = directory / "default.yaml"
    path.write_text(done.stdout)
    return path


def test_every_recorded_case_passes_with_the_default_configuration_file(tmp_path: Path) -> None:
    cases = SUITE / "cases"
    assert cases.is_dir(), f"{cases} is missing: the shared conformance suite must sit beside the repository"
    config = _default_configuration(tmp_path)
    cli = str(CLI) if CLI.exists() else f"{sys.executable} -m fleetsched"
    result = subprocess.run(
        [sys.executable, str(SUITE / "check.py"), "--cli", f"{cli} simulate --config {config}", "-j", "2",
         str(cases)],
        capture_output=True, text=True, timeout=1200, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    expected = f"{len(list(cases.glob('*.expect.yaml')))} passed, 0 failed"
    assert result.stdout.strip().splitlines()[-1] == expected


def test_the_default_configuration_file_prints_what_no_file_prints(tmp_path: Path) -> None:
    # Stronger than the expectations: the whole output, every binding and condition, is the same.
    import contextlib
    import io

    from fleetsched.cli import main

    config = _default_configuration(tmp_path)
    inputs = sorted((SUITE / "cases").glob("*.input.yaml"))
    assert inputs
    for path in inputs:
        outputs = []
        for extra in ((), ("--config", str(config))):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["simulate", str(path), "--explain", *extra])
            outputs.append((code, out.getvalue(), err.getvalue()))
        assert outputs[0] == outputs[1], path.name
        assert outputs[0][0] == 0 and outputs[0][1], path.name
