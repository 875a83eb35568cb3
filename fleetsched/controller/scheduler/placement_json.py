"""Comparing a placement with the ``policy.karmada.io/applied-placement`` annotation, as Go does.

Karmada compares the annotation with the binding's placement after decoding both into Go structs
and running ``reflect.DeepEqual``. Two consequences matter and are
kept here: an absent scalar equals its zero value, but an absent (nil) list or map differs from an
explicitly empty one, and a nil pointer differs from a pointer to an empty struct.

``canonical`` decodes a JSON-shaped placement the way Go would (unknown keys dropped, zero values
filled, nil kept apart from empty). Writing the annotation is the core's job
(``fleetsched.scheduler.outcome.applied_placement_json``). Pure: dicts in, dicts and bools out.
"""

from __future__ import annotations

import json
from typing import Any

# Field kinds: "str" / "int" scalars (absent == zero), "int*" pointer to a scalar,
# ("list", elem), ("map",), ("ptr", struct), ("struct", struct) embedded by value,
# ("inline", struct) fields flattened into the parent. A trailing "!" marks a field Go writes
# even when empty (no omitempty); it decodes like any other.
_Schema = list[tuple[str, Any]]

_REQUIREMENT: _Schema = [("key!", "str"), ("operator!", "str"), ("values", ("list", "str"))]
_LABEL_SELECTOR: _Schema = [("matchLabels", ("map",)), ("matchExpressions", ("list", _REQUIREMENT))]
_FIELD_SELECTOR: _Schema = [("matchExpressions", ("list", _REQUIREMENT))]
_CLUSTER_AFFINITY: _Schema = [
    ("labelSelector", ("ptr", _LABEL_SELECTOR)),
    ("fieldSelector", ("ptr", _FIELD_SELECTOR)),
    ("clusterNames", ("list", "str")),
    ("exclude", ("list", "str")),
]
_OVERFLOW: _Schema = [("affinityName!", "str"), ("", ("inline", _CLUSTER_AFFINITY))]
_TERM: _Schema = [
    ("affinityName!", "str"),
    ("", ("inline", _CLUSTER_AFFINITY)),
    ("overflowAffinities", ("list", _OVERFLOW)),
]
_TOLERATION: _Schema = [
    ("key", "str"),
    ("operator", "str"),
    ("value", "str"),
    ("effect", "str"),
    ("tolerationSeconds", "int*"),
]
_SPREAD: _Schema = [
    ("spreadByField", "str"),
    ("spreadByLabel", "str"),
    ("maxGroups", "int"),
    ("minGroups", "int"),
]
_STATIC_WEIGHT: _Schema = [("targetCluster!", ("struct", _CLUSTER_AFFINITY)), ("weight!", "int")]
_WEIGHT_PREFERENCE: _Schema = [("staticWeightList", ("list", _STATIC_WEIGHT)), ("dynamicWeight", "str")]
_REPLICA_SCHEDULING: _Schema = [
    ("replicaSchedulingType", "str"),
    ("replicaDivisionPreference", "str"),
    ("weightPreference", ("ptr", _WEIGHT_PREFERENCE)),
]
_WORKLOAD_TERM: _Schema = [("groupByLabelKey!", "str")]
_WORKLOAD_AFFINITY: _Schema = [
    ("affinity", ("ptr", _WORKLOAD_TERM)),
    ("antiAffinity", ("ptr", _WORKLOAD_TERM)),
]
PLACEMENT: _Schema = [
    ("clusterAffinity", ("ptr", _CLUSTER_AFFINITY)),
    ("clusterAffinities", ("list", _TERM)),
    ("clusterTolerations", ("list", _TOLERATION)),
    ("spreadConstraints", ("list", _SPREAD)),
    ("replicaScheduling", ("ptr", _REPLICA_SCHEDULING)),
    ("workloadAffinity", ("ptr", _WORKLOAD_AFFINITY)),
]


def _decode_value(kind: Any, value: Any) -> Any:
    if isinstance(kind, list):  # a struct held by value (list elements)
        return _decode_struct(kind, value if isinstance(value, dict) else {})
    if kind == "str":
        return value if isinstance(value, str) else ""
    if kind == "int":
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0
    if kind == "int*":
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    tag = kind[0]
    if tag == "list":
        if not isinstance(value, list):
            return None
        return [_decode_value(kind[1], item) for item in value]
    if tag == "map":
        return dict(value) if isinstance(value, dict) else None
    if tag == "ptr":
        return _decode_struct(kind[1], value) if isinstance(value, dict) else None
    if tag == "struct":
        return _decode_struct(kind[1], value if isinstance(value, dict) else {})
    raise ValueError(f"unknown kind {kind!r}")


def _decode_struct(schema: _Schema, data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, kind in schema:
        if isinstance(kind, tuple) and kind[0] == "inline":
            out.update(_decode_struct(kind[1], data))
            continue
        key = name.rstrip("!")
        out[key] = _decode_value(kind, data.get(key))
    return out


def canonical(placement: dict[str, Any] | None) -> dict[str, Any] | None:
    """Decode a JSON placement as Go would; None stays None (a nil *Placement)."""
    if not isinstance(placement, dict):
        return None
    return _decode_struct(PLACEMENT, placement)


def _term_named(placement: dict[str, Any], name: str) -> dict[str, Any] | None:
    for term in placement.get("clusterAffinities") or ():
        if term.get("affinityName") == name:
            return dict(term)
    return None


def placement_changed(
    placement: dict[str, Any] | None, applied_annotation: str | None, observed_affinity_name: str
) -> bool:
    """Karmada's ``placementChanged``."""
    if not applied_annotation:
        return True
    try:
        applied_raw = json.loads(applied_annotation)
    except ValueError:
        return False
    if applied_raw is not None and not isinstance(applied_raw, dict):
        return False
    current = canonical(placement)
    applied = canonical(applied_raw)
    if current == applied:
        return False
    if current is None or applied is None:
        return True
    for key in ("clusterAffinity", "clusterTolerations", "spreadConstraints", "replicaScheduling"):
        if current[key] != applied[key]:
            return True
    # Only clusterAffinities and/or workloadAffinity differ.
    if not observed_affinity_name:
        return True
    now_term = _term_named(current, observed_affinity_name)
    then_term = _term_named(applied, observed_affinity_name)
    if now_term is None or then_term is None:
        return True
    return now_term != then_term
