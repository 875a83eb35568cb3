"""The scheduling core stays pure: importing it pulls in no network or operator machinery."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("grpc", "kopf", "kubernetes", "aiohttp", "fleetsched.controller", "fleetsched.webhook")


def test_core_imports_no_network_or_operator_modules() -> None:
    code = (
        "import sys, fleetsched.scheduler, fleetsched.scheduler.convert, fleetsched.estimator.general\n"
        f"forbidden = {FORBIDDEN!r}\n"
        "bad = sorted(m for m in sys.modules if m.startswith(forbidden))\n"
        "print(','.join(bad))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""
