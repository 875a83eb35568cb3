"""The estimator algorithm imports no grpc, Kubernetes client or kopf (design: pure core)."""

from __future__ import annotations

import subprocess
import sys

PURE = ["model", "limits", "nodefilter", "cache", "simulator", "framework", "replica", "service",
        "inventory", "inprocess", "handlers", "wire", "estimate_cmd", "plugins.node_resource",
        "plugins.resource_quota"]


def test_algorithm_modules_import_no_network_libraries() -> None:
    code = ("import sys\n"
            + "".join(f"import fleetsched.estimator.{m}\n" for m in PURE)
            + "print(sorted(m for m in ('grpc', 'kubernetes', 'kopf', 'aiohttp') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def _modules_loaded_by(package: str) -> list[str]:
    # Every module under ``package``, imported in a fresh interpreter; what else got loaded.
    code = ("import pkgutil, importlib, sys\n"
            f"root = importlib.import_module({package!r})\n"
            "for info in pkgutil.walk_packages(root.__path__, root.__name__ + '.'):\n"
            "    importlib.import_module(info.name)\n"
            "print(' '.join(sorted(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return result.stdout.split()


def test_the_estimator_binary_never_imports_the_control_plane_package() -> None:
    # The member-side process shares fleetsched.kube with the scheduler, never fleetsched.controller.
    loaded = _modules_loaded_by("fleetsched.estimator")
    assert "fleetsched.estimator.server_cmd" in loaded and "fleetsched.kube.client" in loaded
    assert [m for m in loaded if m.startswith("fleetsched.controller")] == []


def test_the_shared_kube_package_imports_neither_binary() -> None:
    loaded = _modules_loaded_by("fleetsched.kube")
    assert [m for m in loaded if m.startswith(("fleetsched.controller", "fleetsched.estimator"))] == []
