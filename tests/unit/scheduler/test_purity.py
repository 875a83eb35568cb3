"""The scheduling core stays pure: importing it pulls in no network or operator machinery."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("grpc", "kopf", "kubernetes", "aiohttp", "fleetsched.controller", "fleetsched.webhook")


def test_core_imports_no_network_or_operator_modules() -> None:
    code = (
        "import sys, fleetsched.scheduler, fleetsched.scheduler.convert\n"
        "import fleetsched.scheduler.general_estimator\n"
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
    # Only the light, model-free modules: quantities, resource names, times, the compact binding
    # documents simulate holds, and the text shown on a terminal.
    assert proc.stdout.strip() == (
        "fleetsched.api.document,fleetsched.api.quantity,fleetsched.api.resources,fleetsched.api.text,"
        "fleetsched.api.times"
    )


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


def test_the_framework_never_imports_a_plugin() -> None:
    # The in-tree registry is built in scheduler/plugins/registry.py; the interface, registry, runtime
    # and defaults modules (and the public fleetsched.plugin) must load without any plugin module.
    code = (
        "import sys, fleetsched.plugin, fleetsched.scheduler.framework\n"
        "import fleetsched.scheduler.framework.interface, fleetsched.scheduler.framework.registry\n"
        "import fleetsched.scheduler.framework.runtime, fleetsched.scheduler.framework.defaults\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith('fleetsched.scheduler.plugins'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, fleetsched.scheduler.framework as f; f.in_tree_registry();"
            "print('fleetsched.scheduler.plugins.registry' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "True"  # the check above would notice a plugin import
    light = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, fleetsched.plugin; print(any(m.startswith('pydantic') for m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert light.stdout.strip() == "False"  # a plugin package imports the API without the models
