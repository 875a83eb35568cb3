"""The layering in pyproject.toml's [tool.importlinter] holds, and no module of fleetsched/ takes
part in an import circle. Both read every import, those inside functions and under
``TYPE_CHECKING`` too, so a circle held together by a late or a type-only import fails here."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Set
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def import_circles(edges: Mapping[str, Set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative so
    a long import chain cannot exhaust the recursion limit), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            child = next(successors, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return sorted(circles)


def test_the_circle_finder_finds_circles_and_nothing_else() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}, "g": set()}
    assert import_circles(edges) == [["a", "b", "c"], ["d", "e"]]
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    long_chain = {str(i): {str(i + 1)} for i in range(5000)} | {"5000": {"0"}}
    assert len(import_circles(long_chain)[0]) == 5001


def test_no_module_of_fleetsched_is_in_an_import_circle() -> None:
    graph = grimp.build_graph("fleetsched", cache_dir=None)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    circles = import_circles(edges)
    where = [
        f"{importer} -> {imported} (line {detail['line_number']})"
        for circle in circles
        for importer in circle
        for imported in sorted(edges[importer] & set(circle))
        for detail in graph.get_import_details(importer=importer, imported=imported)[:1]
    ]
    assert circles == [], "import circles:\n" + "\n".join(where)
