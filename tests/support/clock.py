"""A clock tests move by hand (``clock.advance``), safe to read from a plugin's thread too."""

from __future__ import annotations

import threading


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now
        self.lock = threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.now += seconds
