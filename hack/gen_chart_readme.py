#!/usr/bin/env python3
"""Write the values table of charts/fleetsched/README.md from values.yaml. ``--check`` only reports drift.

As helm-docs reads a chart (a Go tool, not available here): a comment starting with ``# --`` above
a key, with the ``#`` lines that follow it, documents that key; the table gets one row per documented
key with its type and default (a documented map is one row, its default the whole map). A key with
neither a ``# --`` comment nor documented keys under it is an error, so every value is described.
The table goes between the README's ``<!-- values:begin -->`` and ``<!-- values:end -->`` lines; the
prose around it is the README's own. A test runs this with --check.

Usage: .venv/bin/python hack/gen_chart_readme.py [--check]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "fleetsched"
BEGIN, END = "<!-- values:begin -->", "<!-- values:end -->"
KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.\-]+):(?:\s|$)")


@dataclass(frozen=True)
class Row:
    key: str
    kind: str
    default: str
    description: str


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    kinds = {bool: "bool", int: "int", float: "float", str: "string", list: "list", dict: "object"}
    return kinds[type(value)]


def _default(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"))
    return f"`{text}`".replace("|", "\\|")


def documented(text: str) -> dict[str, str]:
    """Each documented key's dotted path and its description."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    pending: list[str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("# --"):
            pending = [stripped[4:].strip()]
            continue
        if stripped.startswith("#"):
            if pending is not None:
                pending.append(stripped[1:].strip())
            continue
        if not stripped or stripped.startswith("-"):
            continue
        match = KEY.match(line)
        if not match:
            raise ValueError(f"values.yaml:{number}: cannot read a key in {line!r}")
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match["key"]))
        if pending is not None:
            out[".".join(k for _, k in stack)] = " ".join(p for p in pending if p)
            pending = None
    return out


def rows(values: dict[str, Any], docs: dict[str, str], prefix: str = "") -> list[Row]:
    out: list[Row] = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if path in docs:
            out.append(Row(path, _kind(value), _default(value), docs[path].replace("|", "\\|")))
        elif isinstance(value, dict) and value:
            out.extend(rows(value, docs, f"{path}."))
        else:
            raise ValueError(f"values.yaml: {path} has no `# --` comment (every value is documented)")
    return out


def table() -> str:
    text = (CHART / "values.yaml").read_text(encoding="utf-8")
    lines = ["| Key | Type | Default | Description |", "|---|---|---|---|"]
    for row in rows(yaml.safe_load(text), documented(text)):
        lines.append(f"| `{row.key}` | {row.kind} | {row.default} | {row.description} |")
    return "\n".join(lines) + "\n"


def rendered(readme: str) -> str:
    if readme.count(BEGIN) != 1 or readme.count(END) != 1:
        raise ValueError(f"charts/fleetsched/README.md: needs one {BEGIN} and one {END} line")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table()}{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md differs from values.yaml")
    args = parser.parse_args()
    path = CHART / "README.md"
    current = path.read_text(encoding="utf-8")
    try:
        want = rendered(current)
    except ValueError as exc:
        print(f"gen_chart_readme: {exc}", file=sys.stderr)
        return 1
    if want == current:
        return 0
    if args.check:
        print("charts/fleetsched/README.md: its values table differs from values.yaml "
              "(run hack/gen_chart_readme.py)", file=sys.stderr)
        return 1
    path.write_text(want, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
