"""What the webhook tests need to build a case's AdmissionReview and judge the answer, in the repository.

The recorded webhook suite (../shared/webhook-conformance) ships its own checker; the unit tier used to
load it from beside the clone, so a fresh clone could not even collect. This module does the same jobs
for the in-process tests: the request a case stands for (``build_review``, ``hook_path``), an RFC 6902
patch applier (``apply_patch``), Go's omitempty view of an object (``prune_zero``), the first place two
JSON documents differ (``first_difference``) and the checks of one response against a recorded
expectation (``check_common``, ``check_mutation``).
"""

from __future__ import annotations

import base64
import copy
import json
import re
from typing import Any

__all__ = [
    "CaseError",
    "apply_patch",
    "build_review",
    "case_kind",
    "check_common",
    "check_mutation",
    "first_difference",
    "hook_path",
    "prune_zero",
]

GROUP_VERSION = ("policy.karmada.io", "v1alpha1")
# kind -> (plural resource, namespaced)
_RESOURCES = {
    "PropagationPolicy": ("propagationpolicies", True),
    "ClusterPropagationPolicy": ("clusterpropagationpolicies", False),
}
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_INDEX = re.compile(r"0|[1-9][0-9]*")


class CaseError(Exception):
    """The case itself is wrong (not the webhook's answer)."""


# ---- the request -------------------------------------------------------------------------------------


def case_kind(case: dict[str, Any]) -> str:
    obj = case.get("object")
    if not isinstance(obj, dict):
        raise CaseError("case: object: missing or not a mapping")
    kind = obj.get("kind")
    if kind not in _RESOURCES:
        raise CaseError(f"case: object.kind: {kind!r} is not PropagationPolicy or ClusterPropagationPolicy")
    return str(kind)


def hook_path(kind: str, hook: str) -> str:
    """``/validate-propagationpolicy``, ``/mutate-clusterpropagationpolicy``, ..."""
    verb = {"validating": "validate", "mutating": "mutate"}[hook]
    return f"/{verb}-{kind.lower()}"


def build_review(case: dict[str, Any], uid: str) -> dict[str, Any]:
    """The admission.k8s.io/v1 AdmissionReview a case (operation, object, oldObject, namespace) stands for."""
    kind = case_kind(case)
    resource, namespaced = _RESOURCES[kind]
    operation = case.get("operation")
    if operation not in ("CREATE", "UPDATE"):
        raise CaseError(f"case: operation: {operation!r} is neither CREATE nor UPDATE")
    obj = case["object"]
    group, version = GROUP_VERSION
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": resource}
    options_kind = "CreateOptions" if operation == "CREATE" else "UpdateOptions"
    request: dict[str, Any] = {
        "uid": uid,
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": (obj.get("metadata") or {}).get("name", ""),
        "operation": operation,
        "userInfo": {"username": "fleetsched-tests", "groups": ["system:authenticated"]},
        "object": obj,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": options_kind},
    }
    if namespaced:
        # The case's own namespace (the one of the request URL) wins over the object's.
        namespace = case.get("namespace")
        if namespace is None:
            namespace = (obj.get("metadata") or {}).get("namespace")
        if namespace:
            request["namespace"] = str(namespace)
    if operation == "UPDATE":
        if "oldObject" not in case:
            raise CaseError("case: oldObject: an UPDATE needs one")
        request["oldObject"] = case["oldObject"]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


# ---- RFC 6902 ------------------------------------------------------------------------------------------


def _tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"JSON pointer {pointer!r} does not start with '/'")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _index(items: list[Any], token: str, *, end_allowed: bool) -> int:
    if token == "-" and end_allowed:
        return len(items)
    if not _INDEX.fullmatch(token):
        raise ValueError(f"{token!r} is not an array index")
    at = int(token)
    if at > len(items) - (0 if end_allowed else 1):
        raise ValueError(f"array index {at} is out of range")
    return at


def _step(node: Any, token: str) -> Any:
    if isinstance(node, dict):
        if token not in node:
            raise ValueError(f"member {token!r} does not exist")
        return node[token]
    if isinstance(node, list):
        return node[_index(node, token, end_allowed=False)]
    raise ValueError(f"cannot go into a {type(node).__name__} at {token!r}")


def _get(doc: Any, pointer: str) -> Any:
    for token in _tokens(pointer):
        doc = _step(doc, token)
    return doc


def _add(doc: Any, pointer: str, value: Any) -> Any:
    tokens = _tokens(pointer)
    if not tokens:
        return value
    parent = _get(doc, "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens[:-1]))
    if isinstance(parent, dict):
        parent[tokens[-1]] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, tokens[-1], end_allowed=True), value)
    else:
        raise ValueError(f"cannot add into a {type(parent).__name__}")
    return doc


def _remove(doc: Any, pointer: str) -> Any:
    """The removed value (``doc`` is changed in place)."""
    tokens = _tokens(pointer)
    if not tokens:
        raise ValueError("cannot remove the whole document")
    parent = _get(doc, "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens[:-1]))
    if isinstance(parent, dict):
        if tokens[-1] not in parent:
            raise ValueError(f"member {tokens[-1]!r} does not exist")
        return parent.pop(tokens[-1])
    if isinstance(parent, list):
        return parent.pop(_index(parent, tokens[-1], end_allowed=False))
    raise ValueError(f"cannot remove from a {type(parent).__name__}")


def apply_patch(doc: Any, patch: list[Any]) -> Any:
    """``doc`` (a deep copy of it) with the JSON patch applied; ValueError on a patch that does not apply."""
    doc = copy.deepcopy(doc)
    if not isinstance(patch, list):
        raise ValueError("a JSON patch is a list of operations")
    for op in patch:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise ValueError(f"malformed operation {op!r}")
        name, path = op["op"], op["path"]
        if name == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif name == "remove":
            _remove(doc, path)
        elif name == "replace":
            if _tokens(path):
                _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif name == "move":
            doc = _add(doc, path, _remove(doc, op["from"]))
        elif name == "copy":
            doc = _add(doc, path, copy.deepcopy(_get(doc, op["from"])))
        elif name == "test":
            if _get(doc, path) != op.get("value"):
                raise ValueError(f"test failed at {path!r}")
        else:
            raise ValueError(f"unknown operation {name!r}")
    return doc


# ---- comparison ------------------------------------------------------------------------------------------


def _is_zero(value: Any) -> bool:
    if value is None or value is False:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return value == 0
    return isinstance(value, str | dict | list) and not value


def prune_zero(value: Any) -> Any:
    """Object members whose value is Go's zero (null, false, 0, "", {} or [], after pruning) left out, as
    Go's omitempty leaves them out; list elements stay where they are."""
    if isinstance(value, dict):
        pruned = {key: prune_zero(item) for key, item in value.items()}
        return {key: item for key, item in pruned.items() if not _is_zero(item)}
    if isinstance(value, list):
        return [prune_zero(item) for item in value]
    return value


def _same_scalar(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but a boolean is never a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return bool(a == b)
    return type(a) is type(b) and a == b


def first_difference(want: Any, got: Any, path: str = "") -> str | None:
    """Where ``got`` first differs from ``want`` (a JSON pointer and what differs), or None."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            here = f"{path}/{key}"
            if key not in want:
                return f"{here}: unexpected {json.dumps(got[key], sort_keys=True)}"
            if key not in got:
                return f"{here}: missing (expected {json.dumps(want[key], sort_keys=True)})"
            found = first_difference(want[key], got[key], here)
            if found:
                return found
        return None
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return f"{path or '/'}: expected {len(want)} items, got {len(got)}"
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            found = first_difference(w, g, f"{path}/{i}")
            if found:
                return found
        return None
    if not _same_scalar(want, got):
        return f"{path or '/'}: expected {json.dumps(want)}, got {json.dumps(got)}"
    return None


def _quoted(value: Any, limit: int = 300) -> str:
    text = repr(value) if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[:limit] + "...(truncated)"


def check_common(response: dict[str, Any], uid: str, expect: dict[str, Any], strict_code: bool) -> list[str]:
    """The problems of a response against a recorded expectation: uid, allowed, message, code, warnings."""
    problems: list[str] = []
    if response.get("uid") != uid:
        problems.append(f"uid not echoed (sent {uid}, got {response.get('uid')!r})")
    allowed = bool(response.get("allowed", False))
    want_allowed = bool(expect.get("allowed"))
    if allowed != want_allowed:
        problems.append(f"allowed={str(allowed).lower()}, expected {str(want_allowed).lower()}")
    status = response.get("status") or {}  # the AdmissionResponse's Result
    message, want_message = status.get("message") or "", expect.get("message") or ""
    if expect.get("messageExact", True):
        if message != want_message:
            problems.append(f"message mismatch: expected {_quoted(want_message)}, got {_quoted(message)}")
    elif not message:
        problems.append("expected a non-empty message, got none")
    if strict_code and "code" in expect and not allowed and status.get("code") != expect["code"]:
        problems.append(f"status.code {status.get('code')!r}, expected {expect['code']}")
    if "warnings" in expect:
        warnings, want_warnings = list(response.get("warnings") or []), list(expect.get("warnings") or [])
        if warnings != want_warnings:
            problems.append(f"warnings {warnings!r}, expected {want_warnings!r}")
    return problems


def _labels(obj: Any) -> dict[str, Any]:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    return labels if isinstance(labels, dict) else {}


def check_mutation(response: dict[str, Any], case: dict[str, Any], expect: dict[str, Any]) -> list[str]:
    """The problems of a mutating response: its patch applied to the case's object against the recorded
    patch applied to it (generated UUID labels checked for shape, not value), omitempty on both sides."""
    problems: list[str] = []
    obj = case["object"]
    patch: list[Any] = []
    if response.get("patch"):
        if response.get("patchType") != "JSONPatch":
            problems.append(f"patchType {response.get('patchType')!r}, expected 'JSONPatch'")
        try:
            patch = json.loads(base64.b64decode(response["patch"]))
        except (ValueError, TypeError) as exc:
            return [*problems, f"patch is not base64 JSON: {exc}"]
    try:
        got = apply_patch(obj, patch)
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        return [*problems, f"returned patch does not apply: {exc}"]
    try:
        want = apply_patch(obj, expect.get("patch") or [])
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise CaseError(f"expect: patch: does not apply: {exc}") from None
    for label in expect.get("generatedLabels") or []:
        value = _labels(got).get(label)
        if not isinstance(value, str) or not _UUID.match(value):
            problems.append(f"label {label} must be set to a generated UUID, got {value!r}")
        elif value == _labels(obj).get(label):
            problems.append(
                f"label {label} must be regenerated on CREATE, but it kept the submitted value {value!r}"
            )
        _labels(got).pop(label, None)  # generated per request: only its shape is checked
        _labels(want).pop(label, None)
    difference = first_difference(prune_zero(want), prune_zero(got))
    if difference:
        problems.append(f"mutated object differs at {difference}")
    return problems
