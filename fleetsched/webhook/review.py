"""The AdmissionReview protocol (``admission.k8s.io/v1``): bytes in, an AdmissionReview out.

``handle`` is the whole webhook minus the network: it checks the body the way
controller-runtime does (empty, too large, content type), decodes the review and the object
into the Go shapes (``schema``), runs one rule set (``rules``) and encodes the response with the
patch. It never raises: whatever the body, the answer is a well-formed AdmissionReview, and
anything unexpected is a denial with code 500, never an admission.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fleetsched.webhook import budget, gojson, patch, rules, schema

__all__ = [
    "ENDPOINTS",
    "MAX_REQUEST_BYTES",
    "MAX_REVIEW_MEMORY",
    "Endpoint",
    "Outcome",
    "Settings",
    "handle",
    "peek_uid",
]

# controller-runtime's limit on an admission request body.
MAX_REQUEST_BYTES = 7 * 1024 * 1024
# What one request may take to decode and check (``budget.estimate``), by default three times the
# largest body: a body that would expand further is refused before it is parsed.
MAX_REVIEW_MEMORY = 3 * MAX_REQUEST_BYTES
# request.uid is the first "uid" the API server writes (Go field order: kind, apiVersion, request.uid).
_UID = re.compile(rb'"uid"\s*:\s*"((?:[^"\\\n]|\\.){0,253})"')
_UID_HEAD = 4096

GROUP_VERSION = {"PropagationPolicy": "policy.karmada.io/v1alpha1",
                 "ClusterPropagationPolicy": "policy.karmada.io/v1alpha1",
                 "ResourceBinding": "work.karmada.io/v1alpha2",
                 "ClusterResourceBinding": "work.karmada.io/v1alpha2"}

_GVK = schema.Struct("GroupVersionKind", "v1.GroupVersionKind", (
    schema.Field("group", schema.STRING, omitempty=False),
    schema.Field("version", schema.STRING, omitempty=False),
    schema.Field("kind", schema.STRING, omitempty=False),
))
_GVR = schema.Struct("GroupVersionResource", "v1.GroupVersionResource", (
    schema.Field("group", schema.STRING, omitempty=False),
    schema.Field("version", schema.STRING, omitempty=False),
    schema.Field("resource", schema.STRING, omitempty=False),
))
_USER_INFO = schema.Struct("UserInfo", "v1.UserInfo", (
    schema.Field("username", schema.STRING),
    schema.Field("uid", schema.STRING),
    schema.Field("groups", schema.Slice(schema.STRING)),
    schema.Field("extra", schema.Map(schema.Slice(schema.STRING))),
))
_ADMISSION_REQUEST = schema.Struct("AdmissionRequest", "v1.AdmissionRequest", (
    schema.Field("uid", schema.Scalar("string", "types.UID"), omitempty=False),
    schema.Field("kind", _GVK, omitempty=False),
    schema.Field("resource", _GVR, omitempty=False),
    schema.Field("subResource", schema.STRING),
    schema.Field("requestKind", _GVK, pointer=True),
    schema.Field("requestResource", _GVR, pointer=True),
    schema.Field("requestSubResource", schema.STRING),
    schema.Field("name", schema.STRING),
    schema.Field("namespace", schema.STRING),
    schema.Field("operation", schema.Scalar("string", "v1.Operation"), omitempty=False),
    schema.Field("userInfo", _USER_INFO, omitempty=False),
    schema.Field("object", schema.Raw()),
    schema.Field("oldObject", schema.Raw()),
    schema.Field("dryRun", schema.BOOL, pointer=True),
    schema.Field("options", schema.Raw()),
))
_ADMISSION_REVIEW = schema.Struct("AdmissionReview", "v1.AdmissionReview", (
    schema.Field("kind", schema.STRING),
    schema.Field("apiVersion", schema.STRING),
    schema.Field("request", _ADMISSION_REQUEST, pointer=True),
    schema.Field("response", schema.Raw(), pointer=True),
))


@dataclass(frozen=True, slots=True)
class Settings:
    multiple_pod_templates: bool = False
    max_review_memory: int = MAX_REVIEW_MEMORY


@dataclass(slots=True)
class Outcome:
    """The response review plus what the server logs and counts."""

    review: dict[str, Any]
    allowed: bool
    code: int
    message: str = ""
    log: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Answer:
    allowed: bool
    code: int
    reason: str = ""
    message: str = ""
    patch: list[dict[str, Any]] | None = None


class _BadRequest(Exception):
    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.code = code


def _denied(message: str) -> _Answer:
    return _Answer(False, 403, "Forbidden", message)


def _allowed() -> _Answer:
    return _Answer(True, 200)


def _patched(ops: list[dict[str, Any]]) -> _Answer:
    return _Answer(True, 200, patch=ops)


# --- object decoding ----------------------------------------------------------------------

def _parse_group_version(api_version: str) -> tuple[str, str]:
    if api_version in ("", "/"):
        return "", ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", api_version
    if len(parts) == 2:
        return parts[0], parts[1]
    raise _BadRequest(f"unexpected GroupVersion string: {api_version}")


def _decode_object(raw: Any, kind: str, typ: schema.Struct, what: str) -> dict[str, Any]:
    """Decode ``request.object``/``oldObject`` as the scheme-aware Go decoder does."""
    if raw is None:
        raise _BadRequest(f"there is no content to decode ({what} is empty)")
    if not isinstance(raw, dict):
        raise _BadRequest(f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                          f"{schema.json_kind(raw)} "
                          f"into Go value of type struct {{ APIVersion string; Kind string }} ({what})")
    meta: dict[str, str] = {}
    for key in ("apiVersion", "kind"):
        value = raw.get(key)
        if value is not None and not isinstance(value, str):
            raise _BadRequest(f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                              f"{schema.json_kind(value)} into Go struct field .{key} of type string "
                              f"({what})")
        meta[key] = value or ""
    group, version = _parse_group_version(meta["apiVersion"])
    want_group, want_version = GROUP_VERSION[kind].split("/")
    actual_kind = meta["kind"] or kind
    if not version and (not group or group == want_group):
        group, version = want_group, want_version
    if (group, version, actual_kind) != (want_group, want_version, kind):
        gv = f"{group}/{version}" if group else version
        raise _BadRequest(f"unable to decode {gv}, Kind={actual_kind} into *{typ.go_name} ({what})")
    try:
        return schema.decode(raw, typ)
    except schema.DecodeError as exc:
        raise _BadRequest(str(exc)) from None


# --- handlers ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Endpoint:
    path: str
    kind: str
    mutating: bool


ENDPOINTS: dict[str, Endpoint] = {e.path: e for e in (
    Endpoint("/validate-propagationpolicy", "PropagationPolicy", mutating=False),
    Endpoint("/mutate-propagationpolicy", "PropagationPolicy", mutating=True),
    Endpoint("/validate-clusterpropagationpolicy", "ClusterPropagationPolicy", mutating=False),
    Endpoint("/mutate-clusterpropagationpolicy", "ClusterPropagationPolicy", mutating=True),
    Endpoint("/validate-resourcebinding", "ResourceBinding", mutating=False),
    Endpoint("/mutate-resourcebinding", "ResourceBinding", mutating=True),
    Endpoint("/mutate-clusterresourcebinding", "ClusterResourceBinding", mutating=True),
)}

_POLICY_KINDS = {"PropagationPolicy": rules.PROPAGATION_POLICY,
                 "ClusterPropagationPolicy": rules.CLUSTER_PROPAGATION_POLICY}
_BINDING_TYPES = {"ResourceBinding": (schema.RESOURCE_BINDING, rules.RESOURCE_BINDING_PERMANENT_ID),
                  "ClusterResourceBinding": (schema.CLUSTER_RESOURCE_BINDING,
                                             rules.CLUSTER_RESOURCE_BINDING_PERMANENT_ID)}


def _run(endpoint: Endpoint, request: dict[str, Any], raw_request: dict[str, Any], *,
         settings: Settings, new_id: Callable[[], str]) -> _Answer:
    operation = request.get("operation", "")
    namespace = request.get("namespace", "")
    raw_object = raw_request.get("object")
    policy_kind = _POLICY_KINDS.get(endpoint.kind)
    if policy_kind is not None:
        obj = _decode_object(raw_object, endpoint.kind, policy_kind.type, "request.object")
        if endpoint.mutating:
            mutated = rules.mutate_policy(policy_kind, operation=operation, obj=obj,
                                          request_namespace=namespace, permanent_id=new_id())
            return _patched(patch.diff(raw_object, schema.to_go(mutated, policy_kind.type)))
        old = None
        if operation == "UPDATE":
            old = _decode_object(raw_request.get("oldObject"), endpoint.kind, policy_kind.type,
                                 "request.oldObject")
        message = rules.validate_policy(policy_kind, operation=operation, obj=obj, old=old,
                                        request_namespace=namespace)
        return _allowed() if message is None else _denied(message)

    typ, label = _BINDING_TYPES[endpoint.kind]
    obj = _decode_object(raw_object, endpoint.kind, typ, "request.object")
    if endpoint.mutating:
        mutated = rules.mutate_binding(label=label, operation=operation, obj=obj, permanent_id=new_id())
        # Bindings are written by controllers, not users: only the label is patched, nothing normalized.
        return _patched(_label_patch(raw_object, mutated["metadata"].get("labels") or {}, label))
    message = rules.validate_binding(obj, multiple_pod_templates=settings.multiple_pod_templates)
    return _allowed() if message is None else _denied(message)


def _label_patch(raw_object: dict[str, Any], labels: dict[str, str], label: str) -> list[dict[str, Any]]:
    metadata = raw_object.get("metadata")
    if not isinstance(metadata, dict):
        return [{"op": "add", "path": "/metadata", "value": {"labels": labels}}] if labels else []
    raw_labels = metadata.get("labels")
    if not isinstance(raw_labels, dict):
        return [{"op": "add", "path": "/metadata/labels", "value": labels}] if labels else []
    if label in labels and raw_labels.get(label) != labels[label]:
        path = f"/metadata/labels/{patch.pointer_token(label)}"
        return [{"op": "add", "path": path, "value": labels[label]}]
    return []


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


# --- the review ----------------------------------------------------------------------------

def _response(answer: _Answer, uid: str) -> dict[str, Any]:
    status: dict[str, Any] = {"metadata": {}, "code": answer.code}
    if answer.reason:
        status["reason"] = answer.reason
    if answer.message:
        status["message"] = answer.message
    response: dict[str, Any] = {"uid": uid, "allowed": answer.allowed, "status": status}
    if answer.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(answer.patch, separators=(",", ":"),
                                                        ensure_ascii=False).encode()).decode()
    return response


def peek_uid(head: bytes | bytearray) -> str:
    """``request.uid`` read from the first bytes of a body, without parsing it ("" if not there).

    Used where the body is refused unread or undecoded (too large, too costly, too many requests),
    so the answer still carries the uid the API server checks it against."""
    match = _UID.search(bytes(head[:_UID_HEAD]))
    if match is None:
        return ""
    try:
        value = json.loads(b'"' + match.group(1) + b'"')
    except ValueError:
        return ""
    return value if isinstance(value, str) else ""


def refusal(uid: str, code: int, reason: str, message: str, *, api_version: str = "admission.k8s.io/v1"
            ) -> dict[str, Any]:
    """The AdmissionReview for a request the server refuses before ``handle`` (a denial)."""
    answer = _Answer(False, code, reason, message)
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": _response(answer, uid)}


def handle(path: str, body: bytes | bytearray, content_type: str | None, *,
           settings: Settings | None = None, new_id: Callable[[], str] | None = None) -> Outcome:
    """Answer one admission call. Never raises.

    A ``bytearray`` body is consumed: it is cleared as soon as it is decoded to text, so its
    memory is released before the JSON tree is built (the server passes one for that reason)."""
    settings = settings or Settings()
    new_id = new_id or (lambda: str(uuid.uuid4()))
    api_version = "admission.k8s.io/v1"
    uid = ""
    log: dict[str, Any] = {"path": path}
    try:
        endpoint = ENDPOINTS.get(path)
        if endpoint is None:
            raise _BadRequest(f"no admission webhook is served at {path}", 404)
        if not body:
            raise _BadRequest("request body is empty")
        if len(body) > MAX_REQUEST_BYTES:
            raise _BadRequest(f"request entity is too large; limit is {MAX_REQUEST_BYTES} bytes", 413)
        if content_type != "application/json":
            raise _BadRequest(f"contentType={content_type or ''}, expected application/json")
        cost = budget.estimate(body)
        if cost.peak > settings.max_review_memory:
            uid = peek_uid(body)
            log.update(refused="decode_budget", estimated_bytes=cost.peak)
            raise _BadRequest(f"request entity is too large to decode: it would take about "
                              f"{_mib(cost.peak)} of memory, limit is {_mib(settings.max_review_memory)} "
                              f"(--max-review-memory)", 413)
        text = gojson.decode_text(body)
        if isinstance(body, bytearray):
            body.clear()
        try:
            raw_review = gojson.loads(text)
        except (ValueError, RecursionError) as exc:
            raise _BadRequest(f"couldn't decode the AdmissionReview: invalid JSON: {exc}") from None
        del text
        if not isinstance(raw_review, dict):
            raise _BadRequest(f"couldn't decode the AdmissionReview: json: cannot unmarshal "
                              f"{schema.json_kind(raw_review)} into Go value of type v1.AdmissionReview")
        if raw_review.get("apiVersion") == "admission.k8s.io/v1beta1":
            api_version = "admission.k8s.io/v1beta1"
        raw_request = raw_review.get("request")
        if isinstance(raw_request, dict) and isinstance(raw_request.get("uid"), str):
            uid = raw_request["uid"]
        try:
            review = schema.decode(raw_review, _ADMISSION_REVIEW)
        except schema.DecodeError as exc:
            raise _BadRequest(f"couldn't decode the AdmissionReview: {exc}") from None
        request = review.get("request", {})
        if not isinstance(raw_request, dict):
            raw_request = {}
        log.update(kind=endpoint.kind, operation=request.get("operation", ""), name=request.get("name", ""),
                   namespace=request.get("namespace", ""))
        answer = _run(endpoint, request, raw_request, settings=settings, new_id=new_id)
    except _BadRequest as exc:
        answer = _Answer(False, exc.code, message=str(exc))
    except RecursionError:
        answer = _Answer(False, 400, message="the object is nested too deeply to decode")
    except Exception as exc:  # a bug must deny, never admit
        answer = _Answer(False, 500, message=f"internal error: {type(exc).__name__}: {exc}")
    review_out = {"apiVersion": api_version, "kind": "AdmissionReview", "response": _response(answer, uid)}
    log.update(uid=uid, allowed=answer.allowed, code=answer.code)
    return Outcome(review=review_out, allowed=answer.allowed, code=answer.code, message=answer.message,
                   log=log)
