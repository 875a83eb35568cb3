"""Where a plugin registers its own metrics: ``Handle.metrics_registry``.

Owns ``PluginMetrics``, which remembers the collectors the plugins of one Framework register (a
prometheus_client ``Counter``, ``Histogram``... or any object with ``collect()``) until the edge
exports them: the live scheduler registers them with the registry its ``/metrics`` serves; ``simulate``
exports none (the collectors still count, so tests can read them). The core imports no metrics
library: a collector is only kept and handed over. Must do no I/O.
"""

from __future__ import annotations

import threading
from typing import Protocol

__all__ = ["Collector", "PluginMetrics"]


class Collector(Protocol):
    """A metric as prometheus_client's registries take it."""

    def collect(self) -> object: ...


class PluginMetrics:
    """The collectors registered by the plugins of one Framework, in registration order; registering
    the same collector twice keeps it once (a plugin built for two profiles registers its module-level
    collectors twice)."""

    def __init__(self) -> None:
        self._collectors: dict[int, Collector] = {}
        self._lock = threading.Lock()

    def register(self, collector: Collector) -> None:
        """Export ``collector`` with the scheduler's metrics (call it from the plugin's factory)."""
        if not callable(getattr(collector, "collect", None)):
            raise TypeError(f"a metric collector needs a collect() method, got {type(collector).__name__}")
        with self._lock:
            self._collectors.setdefault(id(collector), collector)

    def collectors(self) -> tuple[Collector, ...]:
        with self._lock:
            return tuple(self._collectors.values())
