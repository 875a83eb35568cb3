"""Unknown fields, found as the API server's strict decoding finds them (kubectl's ``--validate``).

kubectl sends objects with ``fieldValidation=Strict``: a field the kind's schema does not declare is
refused with ``strict decoding error: unknown field "spec.placment"``, where without it the API
server would prune it silently (and a typo such as ``placment:`` would turn a Divided policy into
one with no placement at all). Offline commands read YAML the API server never saw, so they check
the same thing here, pure and without a server:

* Karmada's kinds against their structural schema (the one ``crds/`` is generated from): every
  declared property, list item and map value, down to free-form values
  (``x-kubernetes-preserve-unknown-fields``);
* every kind's ``metadata`` against ObjectMeta's fields;
* the other kinds (resource templates, Nodes, Pods) at their top level only: what lies under their
  ``spec`` is the member API server's to check.

Paths print as the API server prints them: ``spec.resourceSelectors[0].kindd``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ["VALIDATE_MODES", "normalize_mode", "unknown_field_message", "unknown_fields"]

# kubectl's --validate values: true/strict refuse, warn warns, false/ignore keeps the pruning.
VALIDATE_MODES = {"true": "strict", "strict": "strict", "warn": "warn", "false": "ignore", "ignore": "ignore"}

OBJECT_META_FIELDS = frozenset(
    {
        "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
        "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
        "ownerReferences", "finalizers", "managedFields",
    }
)
# The top-level fields of the plain kinds read here (Kubernetes' API types).
_TOP_LEVEL: Mapping[str, frozenset[str]] = {
    "ConfigMap": frozenset({"data", "binaryData", "immutable"}),
    "Secret": frozenset({"data", "stringData", "type", "immutable"}),
    "ServiceAccount": frozenset({"secrets", "imagePullSecrets", "automountServiceAccountToken"}),
    "Role": frozenset({"rules"}),
    "ClusterRole": frozenset({"rules", "aggregationRule"}),
    "RoleBinding": frozenset({"subjects", "roleRef"}),
    "ClusterRoleBinding": frozenset({"subjects", "roleRef"}),
    "PriorityClass": frozenset({"value", "globalDefault", "description", "preemptionPolicy"}),
    "StorageClass": frozenset(
        {"provisioner", "parameters", "reclaimPolicy", "mountOptions", "allowVolumeExpansion",
         "volumeBindingMode", "allowedTopologies"}
    ),
}
_ENVELOPE = frozenset({"apiVersion", "kind", "metadata"})
_SPEC_STATUS = frozenset({"spec", "status"})

Loc = tuple[str | int, ...]


def normalize_mode(text: str) -> str:
    """``--validate``'s value as one of strict, warn, ignore (ValueError naming the choices)."""
    mode = VALIDATE_MODES.get(text.strip().lower())
    if mode is None:
        raise ValueError(f"invalid value {text!r}: must be one of strict, warn, ignore (or true, false)")
    return mode


@functools.cache
def _schema(model: type[BaseModel]) -> Mapping[str, Any]:
    from fleetsched.api.crds import structural_schema

    return structural_schema(model)


def unknown_fields(doc: Mapping[str, Any], model: type[BaseModel] | None) -> list[Loc]:
    """The paths of the fields of ``doc`` its kind does not declare, in document order. ``model``:
    the Karmada kind's model, or None for a plain kind (checked at its top level)."""
    found: list[Loc] = []
    if model is not None:
        _walk(doc, _schema(model), (), found)
    else:
        known = _ENVELOPE | _TOP_LEVEL.get(str(doc.get("kind")), _SPEC_STATUS)
        found += [(key,) for key in doc if key not in known]
        metadata = doc.get("metadata")
        if isinstance(metadata, Mapping):
            _metadata(metadata, found)
    return found


def _metadata(metadata: Mapping[str, Any], found: list[Loc]) -> None:
    found += [("metadata", key) for key in metadata if key not in OBJECT_META_FIELDS]


def _walk(value: Any, schema: Mapping[str, Any], loc: Loc, found: list[Loc]) -> None:
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    if loc == ("metadata",):
        if isinstance(value, Mapping):
            _metadata(value, found)
        return
    if isinstance(value, Mapping):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, child in value.items():
            if properties is not None and key in properties:
                _walk(child, properties[key], (*loc, key), found)
            elif isinstance(extra, Mapping):
                _walk(child, extra, (*loc, key), found)
            elif properties is not None or extra is False:
                found.append((*loc, key))
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            _walk(item, schema["items"], (*loc, index), found)


def render(loc: Loc) -> str:
    """The API server's spelling of a path: ``spec.resourceSelectors[0].kindd``."""
    return "".join(f"[{step}]" if isinstance(step, int) else (f".{step}" if i else step)
                   for i, step in enumerate(loc))


def unknown_field_message(paths: list[Loc]) -> str:
    """kubectl's words for them: ``strict decoding error: unknown field "spec.placment"``."""
    return "strict decoding error: " + ", ".join(f'unknown field "{render(p)}"' for p in paths)


def iter_unknown(doc: Mapping[str, Any], model: type[BaseModel] | None) -> Iterator[str]:
    """Each unknown field's rendered path (for warnings)."""
    for loc in unknown_fields(doc, model):
        yield render(loc)
