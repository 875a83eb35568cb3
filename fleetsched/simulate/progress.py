"""``--progress``: a line on stderr while a large input is loaded, planned and scheduled."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    pass



class Progress:
    """One status line on stderr for long runs: the phase and its counts.

    Shown on a terminal once the run has taken more than ``delay`` seconds (redrawn in place, at
    most ten times a second), or whenever asked (``--progress``: no delay; on a file or pipe one
    line per phase and at most one a second). Silent otherwise: a pipe never sees it by default.
    """

    DELAY = 2.0

    def __init__(self, stream: TextIO, *, enabled: bool, delay: float | None = None) -> None:
        self.stream = stream
        self.enabled = enabled
        self.tty = isatty(stream)
        self.delay = self.DELAY if delay is None else delay
        self.interval = 0.1 if self.tty else 1.0
        self.started = time.monotonic()
        self.phase_name = ""
        self.done = 0
        self.total: int | None = None
        self.unit = ""
        self._last = 0.0
        self._visible = False  # a line is on the terminal now (tty only)
        self._shown = False  # anything was ever printed

    def phase(self, name: str, *, total: int | None = None, unit: str = "") -> None:
        self.phase_name, self.done, self.total, self.unit = name, 0, total, unit
        self._draw(force=True)

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._draw(force=self.total is not None and self.done >= self.total)

    def clear(self) -> None:
        """Take the line off the terminal before something else is written there."""
        if self._visible:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._visible = False

    def finish(self, summary: str) -> None:
        """The last line, kept: only when a line was shown before."""
        if not self.enabled or not self._shown:
            return
        self.clear()
        self.stream.write(f"fleetsched simulate: {summary} in {time.monotonic() - self.started:.1f} s\n")
        self.stream.flush()

    def _draw(self, *, force: bool) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.started < self.delay or (not force and now - self._last < self.interval):
            return
        self._last = now
        count = str(self.done) if self.done else ""
        if self.total is not None:
            count = f"{self.done}/{self.total}"
        text = f"fleetsched simulate: {self.phase_name}" + (f" {count}" if count else "")
        text += f" {self.unit}" if self.unit and count else ""
        if self.tty:
            self.stream.write(f"\r{text}\x1b[K")
            self._visible = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self._shown = True


def isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
