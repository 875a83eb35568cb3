"""The one formatter of metav1.Time (``format_time``). Pure and light: standard library only."""

from __future__ import annotations

import datetime as dt
import math
import time

__all__ = ["format_time"]

_last_second: tuple[int, str] = (-1, "")


def format_time(moment: dt.datetime) -> str:
    """metav1.Time's JSON form: RFC 3339 in UTC to the second (a naive time is local time, as
    ``astimezone`` takes it). The text of the latest second is kept: the scheduler's writes and
    Events within one second all format the same one."""
    global _last_second
    second = math.floor(moment.timestamp())
    last = _last_second
    if last[0] != second:
        last = _last_second = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return last[1]
