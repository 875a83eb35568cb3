"""Where the recorded suites live: ``shared/`` beside the clone, outside the repository.

``conformance`` (scheduling cases), ``estimator-conformance``, ``webhook-conformance`` and ``bench`` (the
100 x 5000 fleet) are recorded from Karmada and kept beside the repository, not in it. A test that reads
one carries ``@pytest.mark.recorded("conformance", ...)``; tests/conftest.py skips it with one line naming
what is missing and how to lay it out, or fails it when CI=true (CI must never silently skip them).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ROOT", "SHARED", "SUITES", "in_ci", "missing", "suite"]

ROOT = Path(__file__).resolve().parents[2]
SUITES = ("conformance", "estimator-conformance", "webhook-conformance", "bench")
# ../shared beside the clone, or beside the directory of the clone (a git worktree under wt/).
SHARED = next(
    (p / "shared" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared").is_dir()),
    ROOT.parent / "shared",
)


def suite(name: str) -> Path:
    """The directory of one recorded suite (it may not exist: see ``missing``)."""
    assert name in SUITES, f"unknown recorded suite {name!r} (one of {', '.join(SUITES)})"
    return SHARED / name


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def missing(*names: str) -> str | None:
    """None when every named suite is laid out, else the one line saying what is missing and where."""
    absent = [name for name in names if not suite(name).is_dir()]
    if not absent:
        return None
    return (
        f"recorded suite{'s' if len(absent) > 1 else ''} {', '.join(absent)} not found at "
        f"{ROOT.parent / 'shared'}: lay them out as ../shared/<suite> beside the clone "
        "(../shared/conformance, ../shared/estimator-conformance, ../shared/webhook-conformance, "
        "../shared/bench)"
    )
