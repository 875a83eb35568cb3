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
* Nodes, Pods and ResourceQuotas (a member cluster's inventory) against the fields Kubernetes'
  core API declares for them, to the depth ``corefields.CORE_FIELDS`` lists;
* the other kinds (resource templates) at their top level only: what lies under their ``spec`` is
  the member API server's to check;
* documents of fleetsched's own formats (``fleetsched estimate``'s requests) against a table of
  the same shape (``unknown_in_table``).

Paths print as the API server prints them: ``spec.resourceSelectors[0].kindd``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from fleetsched.api.corefields import CORE_FIELDS, ITEM, FieldTable

__all__ = ["VALIDATE_MODES", "normalize_mode", "unknown_field_message", "unknown_fields", "unknown_in_table"]

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
    elif (table := CORE_FIELDS.get((str(doc.get("apiVersion")), str(doc.get("kind"))))) is not None:
        return unknown_in_table(doc, table)
    else:
        known = _ENVELOPE | _TOP_LEVEL.get(str(doc.get("kind")), _SPEC_STATUS)
        found += [(key,) for key in doc if key not in known]
        metadata = doc.get("metadata")
        if isinstance(metadata, Mapping):
            _metadata(metadata, found)
    return found


def unknown_in_table(doc: Mapping[str, Any], table: FieldTable) -> list[Loc]:
    """The paths of the fields of ``doc`` that ``table`` does not list at their place (``metadata``:
    ObjectMeta's, unless the table says otherwise), in document order. A place the table does not
    list is not checked."""
    found: list[Loc] = []
    _walk_tree(doc, _compiled(table), [], found)
    return found


class _Place:
    """A table as a tree: the known fields here (None: not checked), where each field leads, and
    where a list's items lead."""

    __slots__ = ("fields", "item", "known")

    def __init__(self) -> None:
        self.known: frozenset[str] | None = None
        self.fields: dict[str, _Place] = {}
        self.item: _Place | None = None


# id(table) -> (the table, kept so that its id is not reused; its tree): tables are declared once,
# documents are many (a member cluster of 50,000 Pods).
_COMPILED: dict[int, tuple[FieldTable, _Place]] = {}


def _compiled(table: FieldTable) -> _Place:
    entry = _COMPILED.get(id(table))
    if entry is None or entry[0] is not table:
        root = _Place()
        for path, known in {("metadata",): OBJECT_META_FIELDS, **table}.items():
            place = root
            for step in path:
                if step == ITEM:
                    place.item = place = place.item or _Place()
                else:
                    place = place.fields.setdefault(step, _Place())
            place.known = known
        entry = _COMPILED[id(table)] = (table, root)
    return entry[1]


def _walk_tree(value: Any, place: _Place, loc: list[str | int], found: list[Loc]) -> None:
    if isinstance(value, Mapping):
        known, fields = place.known, place.fields
        for key, child in value.items():
            if known is not None and key not in known:
                found.append((*loc, key))
            elif key in fields:
                loc.append(key)
                _walk_tree(child, fields[key], loc, found)
                loc.pop()
    elif isinstance(value, list) and place.item is not None:
        for index, item in enumerate(value):
            loc.append(index)
            _walk_tree(item, place.item, loc, found)
            loc.pop()


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
