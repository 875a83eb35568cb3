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


def test_core_does_not_import_the_pydantic_models() -> None:
    # fleetsched.api exports its names lazily, so the core's use of fleetsched.api.quantity stays light.
    code = (
        "import sys, fleetsched.scheduler.pipeline, fleetsched.scheduler.convert, fleetsched.simulate\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith(('pydantic', 'fleetsched.api.')))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # Only the light, model-free modules: quantities, and the compact binding documents simulate holds.
    assert proc.stdout.strip() == "fleetsched.api.document,fleetsched.api.quantity"


def test_every_api_export_still_resolves() -> None:
    code = (
        "import fleetsched.api as api\n"
        "missing = [n for n in api.__all__ if getattr(api, n, None) is None]\n"
        "from fleetsched.api import Cluster, ResourceBinding, load_files, parse_quantity\n"
        "assert Cluster.__module__ == 'fleetsched.api.cluster'\n"
        "assert set(api.__all__) <= set(dir(api))\n"
        "assert api.policy.Placement is api.Placement\n"
        "assert api.selectors.__name__ == 'fleetsched.api.selectors'\n"
        "try:\n"
        "    api.NoSuchName\n"
        "except AttributeError as e:\n"
        "    print('missing:', missing, 'error:', e)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "missing: [] error: module 'fleetsched.api' has no attribute 'NoSuchName'"
