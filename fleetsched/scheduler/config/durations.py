"""Go durations as the configuration file writes them (``5s``, ``500ms``, ``1m30s``), to seconds and back.

The file follows kube-scheduler's ``metav1.Duration``: a string with units; a bare number is refused
(Go's ``time.ParseDuration`` says "missing unit"), except ``0``; so is a duration past Go's
``time.Duration`` (int64 nanoseconds, about 292 years), which Go refuses as "invalid duration".
Which range suits which field is the resolver's rule (``resolve.py``).
"""

from __future__ import annotations

import re

__all__ = ["format_duration", "parse_duration"]

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
# Go's time.Duration: int64 nanoseconds.
MAX_SECONDS = (2**63 - 1) / 1e9
_MAX_TEXT = 64  # "2562047h47m16.854775807s" is 24 characters: anything much longer is not a duration


def parse_duration(text: str) -> float:
    """Seconds; ValueError with the reason for anything Go's ``time.ParseDuration`` would refuse."""
    body = text.strip()
    if body.startswith("-"):
        raise ValueError("must not be negative")
    body = body.removeprefix("+")
    if body == "0":
        return 0.0
    if not body:
        raise ValueError("must be a duration such as 5s or 500ms")
    if len(body) > _MAX_TEXT:
        raise ValueError(f"must be a duration such as 5s or 500ms (got {len(body)} characters)")
    position, total = 0, 0.0
    while position < len(body):
        match = _PART.match(body, position)
        if match is None:
            raise ValueError("must be a duration such as 5s, 500ms or 1m30s")
        total += float(match[1]) * _UNITS[match[2]]
        position = match.end()
    if not total <= MAX_SECONDS:  # also inf and nan
        raise ValueError("out of range: longer than Go's time.Duration holds (about 292 years)")
    return total


def format_duration(seconds: float) -> str:
    """The shortest Go-style text for ``seconds`` (``15s``, ``500ms``, ``1m30s``)."""
    if seconds == 0:
        return "0s"
    millis = round(seconds * 1000)
    if abs(seconds * 1000 - millis) > 1e-6:
        return f"{seconds:g}s"
    if millis % 1000:
        return f"{millis}ms" if millis < 1000 else f"{millis / 1000:g}s"
    whole = millis // 1000
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    out = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return out + (f"{secs}s" if secs or not out else "")
