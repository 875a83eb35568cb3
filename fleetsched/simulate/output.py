"""Writing the results: ``-o json|yaml`` streamed as produced (the same bytes as one dump of the whole
``List``) and the table, whose column widths need every row."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    pass

from fleetsched.simulate.explain import Row, table_lines
from fleetsched.simulate.pool import Rendered
from fleetsched.simulate.progress import Progress, isatty

_JSON_HEAD = '{\n  "apiVersion": "v1",\n  "kind": "List",\n  "items": ['


class Writer:
    """Writes the output as results arrive, with the bytes one dump of the whole result would have
    had: ``-o json`` as ``json.dumps(List, indent=2)``, ``-o yaml`` as ``yaml.safe_dump(List)``,
    the table (after ``--explain`` blocks, on stdout) once every row is known."""

    def __init__(
        self, *, output: str, explain: bool, stdout: TextIO, stderr: TextIO, progress: Progress
    ) -> None:
        self.output = output
        self.explain = explain
        self.stdout = stdout
        # Keep machine-readable output on stdout clean: with -o json/yaml, explanations go to stderr.
        self.explain_stream = stdout if output == "table" else stderr
        self.progress = progress
        self.terminal = isatty(stdout) or self.explain_stream is stderr
        self.items = 0
        self.explanations = 0
        self.rows: list[Row] = []

    def begin(self) -> None:
        if self.output == "json":
            self.stdout.write(_JSON_HEAD)
        elif self.output == "yaml":
            self.stdout.write("apiVersion: v1\nkind: List\n")

    def add(self, rendered: Sequence[Rendered]) -> None:
        if self.terminal:
            self.progress.clear()
        if self.explain:
            parts = []
            for r in rendered:
                parts.append(("\n\n" if self.explanations else "") + str(r.explanation))
                self.explanations += 1
            self.explain_stream.write("".join(parts))
        if self.output == "json":
            parts = []
            for r in rendered:
                parts.append((",\n    " if self.items else "\n    ") + str(r.item))
                self.items += 1
            self.stdout.write("".join(parts))
        elif self.output == "yaml":
            parts = []
            for r in rendered:
                parts.append(("" if self.items else "items:\n") + str(r.item))
                self.items += 1
            self.stdout.write("".join(parts))
        else:
            self.rows.extend(r.row for r in rendered if r.row is not None)

    def end(self) -> None:
        self.progress.clear()
        if self.explain:
            self.explain_stream.write("\n")
            if self.output == "table":
                self.explain_stream.write("\n")
        if self.output == "json":
            self.stdout.write("\n  ]\n}\n" if self.items else "]\n}\n")
        elif self.output == "yaml":
            if not self.items:
                self.stdout.write("items: []\n")
        else:
            self.progress.phase("writing the table", total=len(self.rows), unit="rows")
            self.progress.clear()
            for line in table_lines(self.rows):
                self.stdout.write(line + "\n")
        self.stdout.flush()
