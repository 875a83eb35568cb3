"""Flag values shared by every long-running command (scheduler, controller, estimator, webhook).

Plain parsing only: no I/O, no imports beyond the standard library, so any command can use it.
"""

from __future__ import annotations

__all__ = ["parse_bind_address"]


def parse_bind_address(text: str) -> tuple[str, int] | None:
    """A Kubernetes-style bind address: ``:8080`` -> ("0.0.0.0", 8080); ``0`` or empty -> disabled."""
    if text in ("0", ""):
        return None
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bind address {text!r} is not HOST:PORT, :PORT or 0")
    return (host.strip("[]") or "0.0.0.0", int(port))
