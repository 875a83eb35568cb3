"""The estimator algorithm imports no grpc, Kubernetes client or kopf (design: pure core)."""

from __future__ import annotations

import subprocess
import sys

PURE = ["model", "limits", "resources", "nodefilter", "cache", "simulator", "framework", "replica", "service",
        "inventory", "inprocess", "handlers", "wire", "estimate_cmd", "plugins.node_resource",
        "plugins.resource_quota"]


def test_algorithm_modules_import_no_network_libraries() -> None:
    code = ("import sys\n"
            + "".join(f"import fleetsched.estimator.{m}\n" for m in PURE)
            + "print(sorted(m for m in ('grpc', 'kubernetes', 'kopf', 'aiohttp') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
