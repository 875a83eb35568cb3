"""CRD defaulting, as the Kubernetes API server does it, applied to raw objects.

The API models never invent values; objects read back from a real API server already carry the
CRD defaults (Karmada's CRDs: ``replicaSchedulingType: Divided``, ``priority: 0``, ``preemption: Never``,
``schedulerName: default-scheduler``, ``conflictResolution: Abort``, failover ``tolerationSeconds: 300``
and ``purgeMode: Gracefully``, binding ``schedulePriority.priority: 0``). Offline inputs do not, so
``fleetsched simulate`` can apply the same defaults here, from the very schema in ``crds/``.

Semantics follow structural-schema defaulting: a default is set where the field is absent (or
null) inside an object that is present; defaults never create parent objects.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from fleetsched.api.crds import CRD_SPECS, structural_schema

__all__ = ["apply_crd_defaults", "schema_for"]


@cache
def _schemas() -> dict[tuple[str, str], dict[str, Any]]:
    return {(f"{spec.group}/{spec.version}", spec.kind): structural_schema(spec.model) for spec in CRD_SPECS}


def schema_for(api_version: str, kind: str) -> dict[str, Any] | None:
    """The structural schema of a Karmada kind fleetsched ships as a CRD, or None."""
    return _schemas().get((api_version, kind))


def _default(node: Any, schema: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        properties = schema.get("properties")
        if properties:
            for name, sub in properties.items():
                if node.get(name) is None and "default" in sub:
                    node[name] = copy.deepcopy(sub["default"])
                if name in node:
                    node[name] = _default(node[name], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in list(node):
                node[key] = _default(node[key], extra)
    elif isinstance(node, list) and isinstance(schema.get("items"), dict):
        return [_default(item, schema["items"]) for item in node]
    return node


def apply_crd_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """A defaulted deep copy of a raw Karmada object; other kinds come back unchanged (copied)."""
    result = copy.deepcopy(obj)
    schema = schema_for(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    if schema is None:
        return result
    return _default(result, schema)  # type: ignore[no-any-return]
