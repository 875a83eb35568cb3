"""Root conftest: a guard that puts back what a test may change in the process (signal handlers,
environment, working directory), so no test depends on the tests that ran before it.

Being in the ``tests`` package, this file also puts the repository root on ``sys.path``, so
``from tests.support import ...`` works when a single tier or file runs alone.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

GUARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


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
