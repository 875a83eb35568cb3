"""Root conftest: tier markers by folder, the recorded suites' skip (or CI failure), random order for the
unit tier on request, and a guard that puts back what a test may change in the process (signal handlers,
environment, working directory), so no test depends on the tests that ran before it.

Being in the ``tests`` package, this file also puts the repository root on ``sys.path``, so
``from tests.support import ...`` works when a single tier or file runs alone.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.support import recorded

TESTS = Path(__file__).resolve().parent
# Folder under tests/ -> the marker every test in it carries (``-m component`` selects them all).
TIERS = {"unit": "unit", "component": "component", "conformance": "conformance", "e2e": "e2e"}
GUARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "unit: pure code, no server (tests/unit)")
    config.addinivalue_line("markers", "conformance: the recorded suites' checkers (tests/conformance)")
    config.addinivalue_line(
        "markers",
        "recorded(*suites): reads recorded suites from ../shared (conformance, estimator-conformance, "
        "webhook-conformance, bench); skipped when they are missing, failed when CI=true",
    )


def _tier(item: pytest.Item) -> str | None:
    try:
        return Path(item.path).resolve().relative_to(TESTS).parts[0]
    except ValueError:
        return None  # outside tests/ (the example plugins' own tests)


def _random_order_wanted(config: pytest.Config) -> bool:
    """With pytest-randomly installed (not in the test extras yet: the unit tier has not been run
    shuffled as a whole), the unit tier is shuffled when a seed is given (``--randomly-seed=N``); any
    other run keeps the file order."""
    given = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split()]
    return any(arg.startswith("--randomly-seed") for arg in given)


@pytest.hookimpl(wrapper=True, tryfirst=True)  # around pytest-randomly's own wrapper
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Generator[None]:
    """Tier markers; and only the unit tier in random order (the other tiers share control planes and
    servers through module fixtures, and keep their file order)."""
    for item in items:
        marker = TIERS.get(_tier(item) or "")
        if marker is not None and item.get_closest_marker(marker) is None:
            item.add_marker(marker)
    collected = {id(item): i for i, item in enumerate(items)}
    yield  # pytest-randomly (when installed) shuffles here; -m/-k deselect here
    shuffled_units = [item for item in items if _tier(item) == "unit"]
    items.sort(key=lambda item: collected.get(id(item), len(collected)))
    if _random_order_wanted(config):
        units = iter(shuffled_units)
        items[:] = [next(units) if _tier(item) == "unit" else item for item in items]
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    names = [name for mark in item.iter_markers("recorded") for name in mark.args]
    problem = recorded.missing(*names) if names else None
    if problem is None:
        return
    if recorded.in_ci():
        pytest.fail(f"CI=true and {problem}", pytrace=False)
    pytest.skip(problem)


@pytest.fixture(autouse=True)
def _restore_process_state() -> Iterator[None]:
    """SIGINT/SIGTERM handlers, os.environ and the working directory as they were before the test (a
    SIGINT handler left behind made test_the_processs_own_ctrl_c_still_stops_it fail in a full run)."""
    handlers = {sig: signal.getsignal(sig) for sig in GUARDED_SIGNALS}
    environ = dict(os.environ)
    cwd = os.getcwd()
    yield
    for sig, handler in handlers.items():
        if handler is not None and signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)
    if dict(os.environ) != environ:
        os.environ.clear()
        os.environ.update(environ)
    if os.getcwd() != cwd:
        os.chdir(cwd)
