"""RFC 6902 JSON Patch between a request object and its mutated re-encoding.

Karmada's patch is the difference between the raw request object and ``json.Marshal`` of the
mutated Go object, so besides the defaults it also drops explicit zero values and adds fields
the Go type always prints (omitempty-less fields). ``diff`` reproduces that for the fields our Go
tables know; keys they do not know are left untouched rather than removed (the API server has
already pruned fields unknown to the CRD, and dropping data we cannot name would be worse than
a harmless difference).
"""

from __future__ import annotations

from typing import Any

__all__ = ["diff", "json_equal", "pointer_token"]


def pointer_token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: ``1`` is not ``true``, ``1`` equals ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return False


def diff(original: Any, current: Any) -> list[dict[str, Any]]:
    """Operations that turn ``original`` into ``current`` (lists of equal length are patched
    element by element, others replaced whole)."""
    ops: list[dict[str, Any]] = []
    _diff(original, current, "", ops)
    return ops


def _diff(a: Any, b: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            sub = f"{path}/{pointer_token(key)}"
            if key in a and key in b:
                _diff(a[key], b[key], sub, ops)
            elif key in b:
                ops.append({"op": "add", "path": sub, "value": b[key]})
            else:
                ops.append({"op": "remove", "path": sub})
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}/{i}", ops)
        return
    if not json_equal(a, b):
        ops.append({"op": "replace", "path": path, "value": b})
