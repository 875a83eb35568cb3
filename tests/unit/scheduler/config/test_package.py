"""The package's boundary: the resolved types cost nothing to import (the framework runtime, in the
pure core, imports them), and nothing here reaches for the operator or the network."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("grpc", "kopf", "kubernetes", "aiohttp", "fleetsched.controller", "fleetsched.webhook")


def _modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint('\\n'.join(sorted(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_the_resolved_types_import_no_pydantic_and_no_yaml() -> None:
    loaded = _modules_after(
        "import fleetsched.scheduler.framework.profile, fleetsched.scheduler.framework.defaults"
    )
    assert not {m for m in loaded if m.split(".")[0] in ("pydantic", "yaml")}


def test_loading_a_file_imports_no_operator_or_network_modules() -> None:
    loaded = _modules_after(
        "from fleetsched.scheduler import config\n"
        "config.parse_configuration("
        "'apiVersion: config.fleetsched.io/v1alpha1\\nkind: SchedulerConfiguration\\n')"
    )
    assert "pydantic" in loaded
    assert not {m for m in loaded if m.startswith(FORBIDDEN)}


def test_every_export_resolves() -> None:
    from fleetsched.scheduler import config

    assert all(getattr(config, name) is not None for name in config.__all__)
    assert config.Profile.__module__ == "fleetsched.scheduler.framework.profile"
