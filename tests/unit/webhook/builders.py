"""Policy builders and AdmissionReview bodies for the webhook tests."""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

PP_LABEL = "propagationpolicy.karmada.io/permanent-id"
CPP_LABEL = "clusterpropagationpolicy.karmada.io/permanent-id"


def a_policy(
    spec: dict[str, Any] | None = None,
    *,
    kind: str = "PropagationPolicy",
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    name: str = "p",
) -> dict[str, Any]:
    label = PP_LABEL if kind == "PropagationPolicy" else CPP_LABEL
    metadata: dict[str, Any] = {"name": name, "labels": {label: "id-1"} if labels is None else labels}
    if kind == "PropagationPolicy":
        metadata["namespace"] = namespace
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": kind,
        "metadata": metadata,
        "spec": copy.deepcopy(spec) if spec is not None else {},
    }


def a_review(
    obj: Any,
    *,
    operation: str = "CREATE",
    old: Any = None,
    namespace: str | None = None,
    uid: str | None = None,
    api_version: str = "admission.k8s.io/v1",
) -> dict[str, Any]:
    request: dict[str, Any] = {"uid": uid or str(uuid.uuid4()), "operation": operation, "object": obj}
    if isinstance(obj, dict) and namespace is None:
        namespace = (
            (obj.get("metadata") or {}).get("namespace") if isinstance(obj.get("metadata"), dict) else None
        )
    if namespace:
        request["namespace"] = namespace
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": request}


def body(review: dict[str, Any]) -> bytes:
    return json.dumps(review).encode()


def conformance_checker() -> Any:
    """The shared ../shared/webhook-conformance/check.py module (its patch applier and comparisons)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3].parent / "shared" / "webhook-conformance" / "check.py"
    spec = importlib.util.spec_from_file_location("webhook_conformance_check", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
