"""``/convert``: ResourceBinding / ClusterResourceBinding v1alpha1 ⇄ v1alpha2, as
Karmada's conversion webhook converts them.

A ConversionReview (``apiextensions.k8s.io/v1``) in, the converted objects out. v1alpha1 keeps the
replica count and per-replica resources inside ``spec.resource``; v1alpha2 moves them to
``spec.replicas`` and ``spec.replicaRequirements.resourceRequest``. Clusters and status are
copied; fields without a v1alpha1 counterpart are dropped when reading as v1alpha1. Pure: no I/O.
"""

from __future__ import annotations

import copy
from typing import Any

from fleetsched.webhook import gojson

__all__ = ["convert_binding", "handle"]

GROUP = "work.karmada.io"
VERSIONS = (f"{GROUP}/v1alpha1", f"{GROUP}/v1alpha2")
KINDS = ("ResourceBinding", "ClusterResourceBinding")
_REFERENCE_KEYS = ("apiVersion", "kind", "namespace", "name", "resourceVersion")
_V1ALPHA1_STATUS_ITEM_KEYS = ("clusterName", "status", "applied", "appliedMessage")


class ConversionError(ValueError):
    pass


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConversionError(f"{what} must be an object")
    return value


def _to_v1alpha2(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    spec = _mapping(out.get("spec"), "spec")
    resource = _mapping(spec.get("resource"), "spec.resource")
    replicas = resource.pop("replicas", None)
    per_replica = resource.pop("resourcePerReplicas", None)
    if replicas is not None:
        spec["replicas"] = replicas
    if per_replica is not None:
        spec.setdefault("replicaRequirements", {})["resourceRequest"] = per_replica
    if "spec" in out:
        out["spec"] = spec
    return out


def _to_v1alpha1(obj: dict[str, Any]) -> dict[str, Any]:
    out = {k: copy.deepcopy(v) for k, v in obj.items() if k not in ("spec", "status")}
    spec = _mapping(obj.get("spec"), "spec")
    resource = _mapping(spec.get("resource"), "spec.resource")
    new_resource = {k: copy.deepcopy(resource[k]) for k in _REFERENCE_KEYS if k in resource}
    if spec.get("replicas") is not None:
        new_resource["replicas"] = spec["replicas"]
    request = _mapping(spec.get("replicaRequirements"), "spec.replicaRequirements").get("resourceRequest")
    if request is not None:
        new_resource["resourcePerReplicas"] = copy.deepcopy(request)
    new_spec: dict[str, Any] = {"resource": new_resource}
    clusters = spec.get("clusters")
    if isinstance(clusters, list):
        new_spec["clusters"] = [{k: c[k] for k in ("name", "replicas") if k in c}
                                for c in clusters if isinstance(c, dict)]
    out["spec"] = new_spec
    status = _mapping(obj.get("status"), "status")
    if status:
        new_status: dict[str, Any] = {}
        if "conditions" in status:
            new_status["conditions"] = copy.deepcopy(status["conditions"])
        items = status.get("aggregatedStatus")
        if isinstance(items, list):
            new_status["aggregatedStatus"] = [
                {k: copy.deepcopy(i[k]) for k in _V1ALPHA1_STATUS_ITEM_KEYS if k in i}
                for i in items if isinstance(i, dict)]
        out["status"] = new_status
    return out


def convert_binding(obj: Any, desired_api_version: str) -> dict[str, Any]:
    """One binding converted to ``desired_api_version``."""
    if not isinstance(obj, dict):
        raise ConversionError("each object must be a JSON object")
    if desired_api_version not in VERSIONS:
        raise ConversionError(f"unsupported desiredAPIVersion {desired_api_version!r}; "
                              f"expected one of {', '.join(VERSIONS)}")
    source = obj.get("apiVersion")
    if source not in VERSIONS or obj.get("kind") not in KINDS:
        raise ConversionError(f"cannot convert {source}, Kind={obj.get('kind')}: only {', '.join(KINDS)} "
                              f"in {', '.join(VERSIONS)}")
    if source == desired_api_version:
        return copy.deepcopy(obj)
    converted = _to_v1alpha2(obj) if desired_api_version.endswith("v1alpha2") else _to_v1alpha1(obj)
    converted["apiVersion"] = desired_api_version
    return converted


def handle(body: bytes | bytearray, content_type: str | None) -> tuple[int, dict[str, Any]]:
    """(HTTP status, ConversionReview) for one ``/convert`` call. Never raises."""
    review: dict[str, Any] = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}
    if content_type != "application/json":
        review["response"] = _failure("", f"contentType={content_type or ''}, expected application/json")
        return 400, review
    try:
        sent = gojson.loads(body)
    except (ValueError, RecursionError) as exc:
        review["response"] = _failure("", f"invalid JSON: {exc}")
        return 400, review
    request = sent.get("request") if isinstance(sent, dict) else None
    if not isinstance(request, dict):
        review["response"] = _failure("", "ConversionReview has no request")
        return 400, review
    uid = request.get("uid") if isinstance(request.get("uid"), str) else ""
    try:
        objects = request.get("objects") or []
        if not isinstance(objects, list):
            raise ConversionError("request.objects must be a list")
        desired = request.get("desiredAPIVersion")
        converted = [convert_binding(o, desired if isinstance(desired, str) else "") for o in objects]
    except ConversionError as exc:
        review["response"] = _failure(uid, str(exc))
        return 200, review
    review["response"] = {"uid": uid, "convertedObjects": converted, "result": {"status": "Success"}}
    return 200, review


def _failure(uid: str, message: str) -> dict[str, Any]:
    return {"uid": uid, "convertedObjects": [], "result": {"status": "Failure", "message": message}}
