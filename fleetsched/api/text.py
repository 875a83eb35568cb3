"""Text from plugins, extenders and inputs, made fit to be shown: on a terminal, and in API fields.

Owns two pure operations and the limits they serve; it does no I/O and knows no Kubernetes kind:

* ``for_terminal``: what a CLI prints (``simulate --explain``, its table, error lines). Control
  characters (C0, DEL, C1), line and paragraph separators and the bidirectional overrides are
  shown as escapes (``\\x1b``, ``\\u202e``), so a reason cannot clear the screen, move the cursor,
  start a line of its own (a fake ``=> Scheduled=True``) or reorder what follows; text longer than
  ``limit`` characters is cut with a count of what was left out.
* ``fit_message``: what is written to an API field with a size limit (the Scheduled condition's
  message, an Event's message). The same characters are escaped (``kubectl describe`` prints the
  message raw), then the text is cut at a reason boundary — the ``", "`` Karmada joins reasons
  with — and ends with the count of the reasons left out (``… and 12 more reasons``). A single
  reason longer than the whole budget is cut inside, at a UTF-8 character boundary. The result is
  never longer than ``limit_bytes`` in UTF-8.

The limits are the API's: ``CONDITION_MESSAGE_LIMIT`` is the CRD's ``maxLength`` of a condition
message (metav1.Condition's 32768); ``EVENT_MESSAGE_LIMIT`` is kube's ``NoteLengthLimit`` (1024
bytes: events.k8s.io refuses a longer note, and kube-scheduler cuts its core/v1 Event messages to
it); ``ANNOTATIONS_LIMIT`` is the total size of an object's annotations (keys and values,
``TotalAnnotationSizeLimitB``, 256 KiB).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

__all__ = [
    "ANNOTATIONS_LIMIT",
    "CONDITION_MESSAGE_LIMIT",
    "EVENT_MESSAGE_LIMIT",
    "TERMINAL_LIMIT",
    "annotations_size",
    "escape_controls",
    "fit_annotations",
    "fit_conditions",
    "fit_message",
    "for_terminal",
]

CONDITION_MESSAGE_LIMIT = 32768
EVENT_MESSAGE_LIMIT = 1024
ANNOTATIONS_LIMIT = 256 * 1024
# One line of a terminal report: enough for any message a person reads; the rest is counted.
TERMINAL_LIMIT = 4096

REASON_SEPARATOR = ", "
ELLIPSIS = "…"

# C0 controls (tab and newline included: inside one reason they would start a column or a line),
# DEL, C1 controls, the line and paragraph separators, and the bidirectional embeddings,
# overrides and isolates (the "Trojan source" characters).
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every control character (see the module docstring) written as an escape."""
    if _CONTROLS.search(text) is None:
        return text
    return _CONTROLS.sub(_escape, text)


def for_terminal(text: str, *, limit: int = TERMINAL_LIMIT) -> str:
    """``text`` safe to print on one line of a terminal: controls escaped, at most ``limit``
    characters plus the count of those left out."""
    text = escape_controls(text)
    if len(text) <= limit:
        return text
    # Never leave half an escape at the cut (an escape is at most 6 characters: \\u202e).
    cut = text[:limit]
    backslash = cut.rfind("\\", max(0, limit - 5))
    if backslash != -1:
        cut = cut[:backslash]
    return f"{cut}{ELLIPSIS} ({len(text) - len(cut)} more characters)"


def _utf8_prefix(text: str, limit_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding fits ``limit_bytes``."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit_bytes:
        return text
    return data[: max(0, limit_bytes)].decode("utf-8", "ignore")


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def fit_message(
    text: str, limit_bytes: int, *, noun: str = "reasons", separator: str = REASON_SEPARATOR
) -> str:
    """``text`` escaped and cut to at most ``limit_bytes`` of UTF-8 at a ``separator`` boundary,
    ending ``… and N more <noun>`` when anything was left out (the unchanged text when it fits)."""
    text = escape_controls(text)
    if _size(text) <= limit_bytes:
        return text
    parts = text.split(separator)
    total = len(parts)

    def count(left_out: int) -> str:
        return f" and {left_out} more {noun if left_out != 1 else noun.removesuffix('s')}"

    def suffix(left_out: int) -> str:
        return ELLIPSIS + count(left_out)

    # Keep whole reasons while they fit beside the count of those left out.
    kept = 0
    used = 0
    for part in parts:
        size = _size(part) + (len(separator.encode()) if kept else 0)
        if used + size + len(separator.encode()) + _size(suffix(total - kept - 1)) > limit_bytes:
            break
        used += size
        kept += 1
    if kept:
        return separator.join(parts[:kept]) + separator + suffix(total - kept)
    # Not even the first reason fits: cut inside it, and count the others.
    tail = count(total - 1) if total > 1 else ""
    room = limit_bytes - _size(ELLIPSIS) - _size(tail)
    if room < 0:  # a limit too small for any count: the plain prefix
        return _utf8_prefix(text, limit_bytes)
    return _utf8_prefix(parts[0], room) + ELLIPSIS + tail


def annotations_size(annotations: Mapping[str, str]) -> int:
    """Bytes the API counts against ``ANNOTATIONS_LIMIT``: every key and value."""
    return sum(_size(k) + _size(v) for k, v in annotations.items())


def fit_conditions(
    conditions: Sequence[Any], *, types: Collection[str], limit_bytes: int = CONDITION_MESSAGE_LIMIT
) -> list[Any]:
    """``conditions`` with the ``message`` of each condition of one of ``types`` fitted
    (``fit_message``); every other entry unchanged (other controllers own them)."""
    out: list[Any] = []
    for condition in conditions:
        ours = isinstance(condition, Mapping) and condition.get("type") in types
        message = condition.get("message") if ours else None
        if isinstance(message, str):
            fitted = fit_message(message, limit_bytes)
            if fitted is not message:
                condition = {**condition, "message": fitted}
        out.append(condition)
    return out


def fit_annotations(
    current: Mapping[str, str],
    changes: Mapping[str, str | None],
    *,
    optional: Collection[str],
    limit_bytes: int = ANNOTATIONS_LIMIT,
) -> dict[str, str | None]:
    """The annotation ``changes`` (a merge patch: ``None`` removes) made to fit the budget: when
    ``current`` with ``changes`` applied would exceed ``limit_bytes``, the ``optional`` keys (ours,
    informational) are left out of the changes, and removed where ``current`` holds them. The
    other annotations are the user's and Karmada's, and are never touched."""
    after = {k: v for k, v in current.items() if k not in changes}
    after.update({k: v for k, v in changes.items() if v is not None})
    if annotations_size(after) <= limit_bytes:
        return dict(changes)
    fitted = {k: v for k, v in changes.items() if k not in optional}
    fitted.update({k: None for k in optional if k in current})
    return fitted
