"""The policy controller's cached templates indexed by what a resource selector can match. Pure.

A policy event used to parse every cached template of every watched kind and evaluate the policy
against each. A resource selector can only match a template of its own apiVersion and kind;
one with a ``name`` only templates of that name; one with ``matchLabels`` only templates carrying
each pair; one with a ``namespace`` only templates in it. So each template is filed under

* ``("kind", apiVersion, kind)``, ``("ns", namespace)``, ``("name", name)`` and
  ``("label", key, value)`` for each of its labels,

and a selector looks up the one key it cannot match without (the same choice as
``detector.index``). ``candidates`` is a superset of the templates a policy matches, in cache
order, so the queue sees the pushes a full scan made; whether a candidate matches is still decided
by ``implicit_priority``. Each template is parsed once per version it is cached in (``parsed``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fleetsched.api.load import ResourceTemplate
from fleetsched.api.policy import ResourceSelector

__all__ = ["TemplateIndex", "selector_key"]

_Key = tuple[str, ...]


def selector_key(selector: ResourceSelector) -> _Key:
    """The one key every template this selector matches is filed under."""
    if selector.name:
        return ("name", selector.name)
    match_labels = selector.label_selector.match_labels if selector.label_selector is not None else None
    if match_labels:
        key, value = min(match_labels.items())
        return ("label", key, str(value))
    if selector.namespace:
        return ("ns", selector.namespace)
    return ("kind", selector.api_version, selector.kind)


def _template_keys(obj: Mapping[str, Any]) -> tuple[_Key, ...]:
    meta = obj.get("metadata") or {}
    keys: list[_Key] = [("kind", str(obj.get("apiVersion", "")), str(obj.get("kind", "")))]
    keys.append(("ns", str(meta.get("namespace") or "")))
    keys.append(("name", str(meta.get("name") or "")))
    labels = meta.get("labels") or {}
    if isinstance(labels, Mapping):
        keys.extend(("label", str(k), str(v)) for k, v in labels.items())
    return tuple(keys)


@dataclass(slots=True)
class _Entry:
    seq: int
    obj: Mapping[str, Any]
    keys: tuple[_Key, ...]
    parsed: ResourceTemplate | None = None


class TemplateIndex:
    """One resource's templates; fed by its ``ObjectCache`` on upsert and delete."""

    __slots__ = ("_buckets", "_entries", "_seq", "namespaced")

    def __init__(self, *, namespaced: bool | None = None) -> None:
        self.namespaced = namespaced
        self._entries: dict[str, _Entry] = {}
        self._buckets: dict[_Key, dict[str, None]] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._entries)

    def upsert(self, key: str, obj: Mapping[str, Any]) -> None:
        old = self._entries.get(key)
        keys = _template_keys(obj)
        if old is not None:
            if old.keys != keys:
                self._unfile(key, old.keys)
                self._file(key, keys)
            old.obj, old.keys, old.parsed = obj, keys, None
            return
        self._entries[key] = _Entry(self._seq, obj, keys)
        self._seq += 1
        self._file(key, keys)

    def delete(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._unfile(key, entry.keys)

    def _file(self, key: str, keys: Iterable[_Key]) -> None:
        for bucket_key in keys:
            self._buckets.setdefault(bucket_key, {})[key] = None

    def _unfile(self, key: str, keys: Iterable[_Key]) -> None:
        for bucket_key in keys:
            bucket = self._buckets.get(bucket_key)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del self._buckets[bucket_key]

    def parsed(self, key: str) -> ResourceTemplate | None:
        """The cached template as a ``ResourceTemplate``, parsed once per cached version."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.parsed is None:
            entry.parsed = ResourceTemplate.from_dict(entry.obj, namespaced=self.namespaced)
        return entry.parsed

    def object(self, key: str) -> Mapping[str, Any] | None:
        entry = self._entries.get(key)
        return None if entry is None else entry.obj

    def _ordered(self, found: set[str]) -> list[str]:
        entries = self._entries
        return sorted(found, key=lambda k: entries[k].seq)

    def candidates(self, selectors: Iterable[ResourceSelector]) -> list[str]:
        """Keys of the templates any of these selectors may match, in cache order."""
        found: set[str] = set()
        for selector in selectors:
            bucket = self._buckets.get(selector_key(selector))
            if bucket:
                found.update(bucket)
        return self._ordered(found)

    def labelled(self, label: str, value: str) -> list[str]:
        """Keys of the templates carrying ``label: value``, in cache order."""
        return self._ordered(set(self._buckets.get(("label", label, value), ())))
