"""Text the way Karmada's Go code prints it: ``%q`` strings and ``encoding/json`` output.

Validation messages quote the offending value. Karmada (through apimachinery's field errors)
prints strings with Go's ``%q`` and objects with ``json.Marshal``: compact, struct fields in
declaration order (decided by the caller, see ``schema``), map keys sorted, and ``<``, ``>``,
``&``, U+2028, U+2029 escaped. This module owns only the character-level rules; it knows
nothing about policies.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

__all__ = ["GoFloat", "decode_text", "dumps", "loads", "quote"]


class GoFloat(float):
    """A JSON number that is not an integer literal, keeping its text for decoder messages."""

    __slots__ = ("literal",)  # no per-instance dict: bodies may hold millions of numbers

    literal: str

    def __new__(cls, literal: str) -> GoFloat:
        obj = super().__new__(cls, literal)
        obj.literal = literal
        return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid character {name[0]!r} looking for beginning of value")


def decode_text(data: bytes | bytearray) -> str:
    """Bytes as Go's decoder reads them: UTF-8, an invalid sequence becoming U+FFFD."""
    return data.decode("utf-8", errors="replace")


def loads(data: bytes | bytearray | str) -> Any:
    """Parse JSON as Go does: invalid UTF-8 becomes U+FFFD, NaN/Infinity are rejected,
    non-integer numbers keep their literal (``GoFloat``)."""
    text = decode_text(data) if isinstance(data, bytes | bytearray) else data
    value = json.loads(text, parse_float=GoFloat, parse_constant=_reject_constant)
    return _replace_surrogates(value)


def _fix_str(s: str) -> str:
    # Go's decoder turns an unpaired UTF-16 surrogate escape into U+FFFD.
    if _has_surrogate(s):
        return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in s)
    return s


def _replace_surrogates(value: Any) -> Any:
    # Iterative walk: bodies may be deeply nested and must not exhaust the stack twice.
    if isinstance(value, str):
        return _fix_str(value)
    if not isinstance(value, dict | list):
        return value
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if any(isinstance(k, str) and _has_surrogate(k) for k in node):
                items = [(_fix_str(k), v) for k, v in node.items()]
                node.clear()
                node.update(items)
            for k, v in node.items():
                if isinstance(v, str):
                    node[k] = _fix_str(v)
                elif isinstance(v, dict | list):
                    stack.append(v)
        else:
            for i, v in enumerate(node):
                if isinstance(v, str):
                    node[i] = _fix_str(v)
                elif isinstance(v, dict | list):
                    stack.append(v)
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_surrogate(s: str) -> bool:
    return _SURROGATE.search(s) is not None  # C speed: a 7 MiB string takes ms, not a second of bytecode


_QUOTE_SHORT = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v"}


def _go_isprint(ch: str) -> bool:
    # Go's strconv.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space.
    if ch == " ":
        return True
    cat = unicodedata.category(ch)
    return cat[0] in "LMNPS"


def quote(s: str) -> str:
    """Go's ``strconv.Quote`` (what ``%q`` prints for a string)."""
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x80 and 0x20 <= code < 0x7F:
            out.append(ch)
        elif code in _QUOTE_SHORT:
            out.append(_QUOTE_SHORT[code])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif _go_isprint(ch):
            out.append(ch)
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_JSON_SHORT = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_JSON_HTML = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


_JSON_SPECIAL = re.compile('[\x00-\x1f"\\\\<>&\u2028\u2029]')


def _json_escape(match: re.Match[str]) -> str:
    ch = match.group()
    return _JSON_SHORT.get(ch) or _JSON_HTML.get(ch) or f"\\u{ord(ch):04x}"


def _json_string(s: str) -> str:
    return '"' + _JSON_SPECIAL.sub(_json_escape, s) + '"'


def dumps(value: Any) -> str:
    """Compact JSON with Go's escaping. Dict order is kept as given (callers order struct
    fields and sort map keys); ``None`` prints as ``null``."""
    parts: list[str] = []
    _dump(value, parts)
    return "".join(parts)


def _dump(value: Any, parts: list[str]) -> None:
    if value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, str):
        parts.append(_json_string(value))
    elif isinstance(value, GoFloat):
        parts.append(value.literal)
    elif isinstance(value, int):
        parts.append(str(value))
    elif isinstance(value, float):
        parts.append(json.dumps(value))
    elif isinstance(value, dict):
        parts.append("{")
        first = True
        for k, v in value.items():
            if not first:
                parts.append(",")
            first = False
            parts.append(_json_string(str(k)))
            parts.append(":")
            _dump(v, parts)
        parts.append("}")
    elif isinstance(value, list | tuple):
        parts.append("[")
        for i, v in enumerate(value):
            if i:
                parts.append(",")
            _dump(v, parts)
        parts.append("]")
    else:
        raise TypeError(f"cannot render {type(value).__name__} as JSON")
