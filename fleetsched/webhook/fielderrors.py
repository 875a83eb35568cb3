"""Field errors and their aggregation, worded as apimachinery's ``field.ErrorList`` words them.

An error is a ``(field_path, message)`` pair; ``str()`` gives ``path: message``. ``aggregate``
joins a list the way ``ErrorList.ToAggregate().Error()`` does: duplicates by full text dropped,
one error printed alone, several wrapped in ``[`` ``]`` and joined by ``, ``.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from fleetsched.webhook import gojson, schema

__all__ = [
    "FieldError",
    "aggregate",
    "invalid",
    "label_key_messages",
    "not_supported",
    "render",
]


class FieldError(NamedTuple):
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def render(value: Any, typ: Any = None) -> str:
    """A bad value as ``field.Invalid`` prints it: Go-quoted strings, bare numbers and
    booleans, ``null`` for a nil pointer, JSON of the Go value for structs and lists."""
    if typ is None:
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, str):
            return gojson.quote(value)
        raise TypeError("structured values need their Go type to be rendered")
    return gojson.dumps(schema.to_go(value, typ))


def invalid(path: str, rendered_value: str, detail: str) -> FieldError:
    return FieldError(path, f"Invalid value: {rendered_value}: {detail}")


def not_supported(path: str, value: str, supported: tuple[str, ...]) -> FieldError:
    choices = ", ".join(gojson.quote(s) for s in supported)
    return FieldError(path, f"Unsupported value: {gojson.quote(value)}: supported values: {choices}")


def aggregate(errors: list[FieldError]) -> str:
    # Equal (path, message) pairs first: repeats share one message object, and printing each of
    # them (as a list of thousands of duplicate terms would) costs memory for nothing.
    seen = list(dict.fromkeys(str(err) for err in dict.fromkeys(errors)))
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


# --- label keys (apimachinery's IsQualifiedName) -------------------------------------------------------

_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_FORMAT = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
_TOO_MANY_SLASHES = ("a valid label key " + _NAME_FORMAT
                     + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
_SUBDOMAIN_FORMAT = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
                     "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
                     "regex used for validation is "
                     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def label_key_messages(value: str) -> list[str]:
    """Messages for a string that must be a qualified name (label key); empty when valid."""
    parts = value.split("/")
    messages: list[str] = []
    if len(parts) > 2:
        return [_TOO_MANY_SLASHES]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            messages.append("prefix part must be non-empty")
        else:
            if len(prefix.encode()) > 253:
                messages.append("prefix part must be no more than 253 bytes")
            if not _SUBDOMAIN_RE.fullmatch(prefix):
                messages.append("prefix part " + _SUBDOMAIN_FORMAT)
    if not name:
        messages.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        messages.append("name part must be no more than 63 bytes")
    if not _NAME_RE.fullmatch(name):
        messages.append("name part " + _NAME_FORMAT)
    return messages
