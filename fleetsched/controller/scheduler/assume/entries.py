"""The shard group's reservation ledger, as written: one member's annotation maps binding keys to
entries, each a decision's footprints (``encode_entry``) read back defensively (``decode_entry``,
``parse_annotation``): anything unreadable is an ``EntryProblem`` naming the field and why, with the
reason the ledger counts it under (``SKIP_REASONS``). Pure: no client, no I/O (``ledger.py`` runs
the ledger itself)."""

from __future__ import annotations

import base64
import json
import math
import zlib
from collections.abc import Mapping
from typing import Any

from fleetsched.api.quantity import format_canonical, parse_quantity
from fleetsched.scheduler.types import AssumedWorkload, Component, ReplicaRequirements

# The entry layout this replica writes (``v``). It reads every layout up to it (1: no ``v``); an
# entry of a newer layout (a replica of the next version, during a rolling upgrade) is skipped.
VERSION = 2
FUTURE_SKEW = 5.0  # an entry stamped further ahead of our clock than this is skipped
MAX_ENTRY_BYTES = 64 * 1024  # one decision's entry; a larger one is refused (DecisionTooLarge)
COMPRESS_OVER = 1024  # a layout-2 ``c`` longer than this is written compressed (``z``)
MAX_INFLATED = 4 * 1024 * 1024  # what a ``z`` may inflate to
MAX_REPLICAS = 2**31 - 1
# Why an entry is skipped (the label of fleetsched_scheduler_ledger_entries_skipped_total).
UNPARSABLE = "unparsable"
UNKNOWN_VERSION = "unknown_version"
UNKNOWN_MEMBER = "unknown_member"
FUTURE = "future"
SKIP_REASONS = (UNPARSABLE, UNKNOWN_VERSION, UNKNOWN_MEMBER, FUTURE)


class EntryProblem(ValueError):
    """Why an annotation or entry of the ledger is skipped: ``reason`` is the metric's label
    (``SKIP_REASONS``), the message says what was wrong, in one line."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise EntryProblem(UNPARSABLE, f"{name} {_short(value)} is not a number")
    return float(value)


def _replicas(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPLICAS:
        raise EntryProblem(UNPARSABLE, f"replicas {_short(value)} is not an integer in 0..{MAX_REPLICAS}")
    return value


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise EntryProblem(UNPARSABLE, f"{what} is {type(value).__name__}, not an object")
    return value


def encode_entry(footprints: Mapping[str, AssumedWorkload], at: float, base: str = "") -> dict[str, Any]:
    """A decision's footprints as the ledger holds them (layout ``VERSION``): when, the binding's
    resourceVersion it was decided from, the namespace, each component's per-replica requests once,
    and per component the clusters by replica count, comma-separated (``c``); past
    ``COMPRESS_OVER`` bytes that part is zlib-compressed and base64-encoded instead (``z``), so a
    decision over 1,000 Clusters takes a few KiB of the Lease's 256 KiB of annotations."""
    namespace = ""
    requests: dict[str, dict[str, str]] = {}
    by_component: dict[str, dict[str, list[str]]] = {}
    for cluster, workload in footprints.items():
        namespace = workload.namespace
        for c in workload.components:
            if c.replica_requirements is not None and c.name not in requests:
                requests[c.name] = {
                    name: format_canonical(q.value_exact, q.format)
                    for name, q in c.replica_requirements.resource_request
                }
            by_component.setdefault(c.name, {}).setdefault(str(c.replicas), []).append(cluster)
    placed = [[name, {r: ",".join(cs) for r, cs in counts.items()}] for name, counts in by_component.items()]
    entry: dict[str, Any] = {"v": VERSION, "t": round(at, 3), "rv": base, "ns": namespace, "q": requests}
    text = json.dumps(placed, separators=(",", ":"))
    if len(text) > COMPRESS_OVER:
        entry["z"] = base64.b64encode(zlib.compress(text.encode(), 9)).decode("ascii")
    else:
        entry["c"] = placed
    return entry


def entry_size(entry: Mapping[str, Any]) -> int:
    """Bytes the entry takes in its member's annotation."""
    return len(json.dumps(entry, separators=(",", ":")).encode())


def parse_annotation(text: str) -> dict[str, Any]:
    """A member's annotation: binding key -> entry; EntryProblem when it is not a JSON object."""
    try:
        entries = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise EntryProblem(UNPARSABLE, f"not JSON: {str(exc)[:80]}") from None
    return _object(entries, "the annotation")


def entry_stamp(raw: Any) -> float | None:
    """The entry's ``t`` when it is a number, else None (for the stale check: never raises)."""
    at = raw.get("t") if isinstance(raw, dict) else None
    if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at):
        return None
    return float(at)


def decode_entry(raw: Any, *, now: float | None = None) -> tuple[float, dict[str, AssumedWorkload]]:
    """The inverse of ``encode_entry``, for layouts 1 (no ``v``: per cluster its components) and
    ``VERSION``. EntryProblem (a ValueError) naming the field on anything else: ``unparsable``,
    ``unknown_version`` (a newer replica's layout, skipped during a rolling upgrade), or
    ``future`` (stamped more than ``FUTURE_SKEW`` after ``now``)."""
    raw = _object(raw, "the entry")
    version = raw.get("v", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise EntryProblem(UNPARSABLE, f"v {_short(version)} is not a positive integer")
    if version > VERSION:
        raise EntryProblem(UNKNOWN_VERSION, f"layout v{version} is newer than this replica's v{VERSION}")
    at = _number(raw.get("t"), "t")
    if now is not None and at > now + FUTURE_SKEW:
        ahead = f"{at - now:.0f}s in the future (more than {FUTURE_SKEW:g}s)"
        raise EntryProblem(FUTURE, f"t {at:.3f} is {ahead}")
    namespace = raw.get("ns") or ""
    if not isinstance(namespace, str):
        raise EntryProblem(UNPARSABLE, f"ns {_short(namespace)} is not a string")
    requirements: dict[str, ReplicaRequirements] = {}
    for name, request in _object(raw.get("q") or {}, "q").items():
        pairs = []
        for resource, value in _object(request, f"q.{name}").items():
            try:
                pairs.append((resource, parse_quantity(str(value))))
            except (ValueError, TypeError, ArithmeticError) as exc:
                raise EntryProblem(UNPARSABLE, f"q.{name}.{resource}: {str(exc)[:80]}") from None
        requirements[name] = ReplicaRequirements(resource_request=tuple(sorted(pairs)))
    parts: dict[str, list[Component]] = {}
    if version == 1:
        for cluster, components in _object(raw.get("c") or {}, "c").items():
            if not isinstance(components, list):
                raise EntryProblem(UNPARSABLE, f"c.{cluster} is not a list")
            for item in components:
                if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str):
                    shape = f"{_short(item)}, not [component, replicas]"
                    raise EntryProblem(UNPARSABLE, f"c.{cluster} has {shape}")
                component = Component(item[0], _replicas(item[1]), requirements.get(item[0]))
                parts.setdefault(cluster, []).append(component)
    else:
        for name, counts in _placed(raw):
            for count, clusters in counts.items():
                digits = count.isascii() and count.isdigit() and len(count) <= 10
                replicas = _replicas(int(count) if digits else count)
                if not isinstance(clusters, str):
                    raise EntryProblem(UNPARSABLE, f"c.{name}.{count} is not a string of cluster names")
                for cluster in filter(None, clusters.split(",")):
                    parts.setdefault(cluster, []).append(Component(name, replicas, requirements.get(name)))
    return at, {cluster: AssumedWorkload(namespace, tuple(cs)) for cluster, cs in parts.items()}


def _placed(raw: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Layout 2's ``c`` (or ``z`` decompressed, at most ``MAX_INFLATED`` bytes) checked for shape."""
    placed = raw.get("c")
    if "z" in raw:
        try:
            inflater = zlib.decompressobj()
            text = inflater.decompress(base64.b64decode(str(raw["z"]), validate=True), MAX_INFLATED)
            if inflater.unconsumed_tail:
                raise EntryProblem(UNPARSABLE, f"z inflates past {MAX_INFLATED} bytes")
            placed = json.loads(text)
        except (ValueError, zlib.error, RecursionError) as exc:
            if isinstance(exc, EntryProblem):
                raise
            raise EntryProblem(UNPARSABLE, f"z: {str(exc)[:80]}") from None
    if not isinstance(placed, list):
        raise EntryProblem(UNPARSABLE, f"c {_short(placed)} is not a list")
    out = []
    for item in placed:
        if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str):
            raise EntryProblem(UNPARSABLE, f"c has {_short(item)}, not [component, {{replicas: clusters}}]")
        out.append((item[0], _object(item[1], f"c.{item[0]}")))
    return out
