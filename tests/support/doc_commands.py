"""The commands README.md and docs/ show, as the tests that run them see them.

A fenced block holds commands in one of two forms: a ``console`` block (or any block whose lines
start with ``$ ``) gives each command after ``$ `` and, below it, what the command prints (a last
line ``…`` means the output goes on: what is shown is its beginning); any other block counts a line
as a command when it starts with a program a reader would type (``fleetsched``, ``kubectl``,
``make``, ``helm``, ``hack/…``), ``\\`` continuing it on the next line. Inline code that starts with
``fleetsched`` (or ``kubectl fleetsched``) is a command too, without shown output.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# docs/cli.md is generated from the parsers (tests/unit/test_cli_docs.py): its blocks are usage lines.
PAGES = sorted([ROOT / "README.md", *(p for p in (ROOT / "docs").glob("*.md") if p.name != "cli.md")])
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
PROGRAMS = re.compile(r"^(?:\.venv/bin/)?(?:fleetsched|kubectl|make|helm|docker)\b|^hack/")
INLINE = re.compile(r"(?<!`)`((?:\.venv/bin/|kubectl )?fleetsched [^`\n]+)`(?!`)")
# what a reader replaces: FILE, NS/NAME, KARMADA_APISERVER_KUBECONFIG, rb/…, …
PLACEHOLDER = re.compile(r"…|\.\.\.|\b[A-Z][A-Z0-9_]{2,}\b|\bNS\b|\|")
# subcommands that need no cluster: run as shown
OFFLINE = {"simulate", "estimate", "config"}


@dataclass(frozen=True)
class Command:
    page: Path
    line: int  # of the command in its page
    text: str  # as shown, continuation lines joined, without the ``$ ``
    output: str | None  # what the page shows it prints (None: nothing shown)
    prefix: bool  # the output shown is the beginning of what it prints
    inline: bool

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def argv(self) -> list[str]:
        """The words of the command, without a trailing comment."""
        return shlex.split(self.text, comments=True)

    @property
    def fleetsched(self) -> list[str] | None:
        """The arguments after ``fleetsched`` when this runs fleetsched (also as a kubectl plugin)."""
        words = self.argv
        if "|" in words:  # `fleetsched simulate … -o yaml | kubectl apply -f -`: fleetsched's part
            words = words[: words.index("|")]
        if words[:2] == ["kubectl", "fleetsched"]:
            return words[2:]
        if words and words[0] in ("fleetsched", ".venv/bin/fleetsched"):
            return words[1:]
        return None

    @property
    def has_placeholder(self) -> bool:
        return bool(PLACEHOLDER.search(self.text.split(" #", 1)[0]))

    @property
    def runs_offline(self) -> bool:
        """A whole command that needs no cluster: a fleetsched command of a block, or inline one that
        names its input (a file of the repository, or ``config default``), with nothing to replace."""
        args = self.fleetsched
        if not args or args[0] not in OFFLINE or self.has_placeholder or "-" in args:
            return False
        return not self.inline or any((ROOT / a).is_file() for a in args) or args[:2] == ["config", "default"]


def _block_commands(page: Path, language: str, body: str, first_line: int) -> list[Command]:
    lines = body.splitlines()
    out: list[Command] = []
    if language == "console" or any(line.startswith("$ ") for line in lines):
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                i += 1
                continue
            start, text = i, lines[i][2:]
            i += 1
            shown: list[str] = []
            while i < len(lines) and not lines[i].startswith("$ "):
                shown.append(lines[i])
                i += 1
            prefix = bool(shown) and shown[-1].strip() == "…"
            if prefix:
                shown = shown[:-1]
            output = "".join(f"{line}\n" for line in shown) if shown else None
            out.append(Command(page, first_line + start, text, output, prefix, inline=False))
        return out
    if language not in ("", "sh", "bash", "shell"):
        return out
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        start = i
        i += 1
        if not PROGRAMS.match(stripped):
            continue
        text = stripped
        while text.endswith("\\") and i < len(lines):
            text = text[:-1].rstrip() + " " + lines[i].strip()
            i += 1
        out.append(Command(page, first_line + start, text, None, False, inline=False))
    return out


def commands(pages: list[Path] = PAGES) -> list[Command]:
    found: list[Command] = []
    for page in pages:
        text = page.read_text()
        for match in FENCE.finditer(text):
            first = text.count("\n", 0, match.start(2)) + 1
            found += _block_commands(page, match[1], match[2], first)
        prose = FENCE.sub(lambda m: "\n" * m[0].count("\n"), text)
        for match in INLINE.finditer(prose):
            line = prose.count("\n", 0, match.start()) + 1
            found.append(Command(page, line, match[1], None, False, inline=True))
    return found
