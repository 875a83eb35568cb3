"""kopf is used through its public API only: no import of its private modules, no patching."""

from __future__ import annotations

import ast
from pathlib import Path

import fleetsched

PACKAGE = Path(fleetsched.__file__).parent


def private_kopf_uses(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kopf._"):
            found.append(f"from {node.module} import ...")
        elif isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.startswith("kopf._")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id == "kopf":
                found.append(ast.unparse(node))
    return found


def test_the_detector_finds_what_it_looks_for() -> None:
    sample = "import kopf\nfrom kopf._core.reactor import processing\nkopf._cogs.x = 1\n"
    assert private_kopf_uses(sample) == ["from kopf._core.reactor import ...", "kopf._cogs"]
    assert private_kopf_uses("import kopf\nkopf.on.event('g', 'v', 'p')\n") == []


def test_no_module_reaches_into_kopf_internals() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): uses
        for path in sorted(PACKAGE.rglob("*.py"))
        if (uses := private_kopf_uses(path.read_text()))
    }
    assert offenders == {}
    assert "kopf._" not in "".join(p.read_text() for p in PACKAGE.rglob("*.py"))
