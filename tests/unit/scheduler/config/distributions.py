"""Real installed distributions for entry-point tests: a package directory and its ``*.dist-info``
(METADATA + entry_points.txt) on a path that is put on ``sys.path`` (or ``PYTHONPATH``), which is
what ``pip install`` leaves behind, so ``importlib.metadata`` finds them as it finds any other."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

COST_SCORE = '''
class CostScore:
    """Scores a cluster by its cost label (the example of issue 12)."""

    name = "CostScore"

    def __init__(self, args=None, handle=None):
        self.args = args or {}

    def score(self, ctx, cluster):
        return 100 - int(cluster.labels.get("cost", "0"))
'''

TENANT_FILTER = """
class TenantFilter:
    name = "TenantFilter"

    def filter(self, ctx, cluster):
        raise NotImplementedError

    def score(self, ctx, cluster):
        return 0


def build(args=None, handle=None):
    return TenantFilter()
"""

BROKEN = """
import fleetsched_this_module_does_not_exist  # noqa: F401
"""


def install(
    root: Path,
    distribution: str,
    *,
    modules: Mapping[str, str],
    entry_points: Mapping[str, str],
    group: str = "fleetsched.plugins",
) -> Path:
    """Write ``modules`` (name -> source) and a dist-info for ``distribution`` under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for module, source in modules.items():
        package = root / module
        package.mkdir()
        (package / "__init__.py").write_text(source)
    info = root / f"{distribution.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}")
    (info / "RECORD").write_text("")
    return root
