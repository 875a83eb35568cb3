"""The AdmissionReview protocol in process: shapes, codes and bad bodies (webhook.md §3)."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

from fleetsched.webhook import review

from .builders import PP_LABEL, a_policy, a_review, body, conformance_checker

check = conformance_checker()
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def call(path: str, data: bytes, content_type: str | None = "application/json") -> dict[str, Any]:
    outcome = review.handle(path, data, content_type)
    assert outcome.review["kind"] == "AdmissionReview"
    return outcome.review


def test_allowed_validation_has_code_200_and_no_patch() -> None:
    selector = {"apiVersion": "v1", "kind": "A", "namespace": "default"}
    sent = a_review(a_policy({"resourceSelectors": [selector]}),
                    uid="u-1")
    got = call("/validate-propagationpolicy", body(sent))
    assert got["apiVersion"] == "admission.k8s.io/v1"
    assert got["response"] == {"uid": "u-1", "allowed": True, "status": {"metadata": {}, "code": 200}}


def test_denial_is_403_forbidden_with_the_message() -> None:
    sent = a_review(a_policy({"placement": {"clusterTolerations": [{"operator": "Gt"}]}}), uid="u-2")
    response = call("/validate-propagationpolicy", body(sent))["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 403 and response["status"]["reason"] == "Forbidden"
    assert response["status"]["message"].startswith(
        "spec.placement.clusterTolerations[0].operator: Unsupported")


def test_mutation_patch_sets_a_fresh_uuid_and_the_finalizer() -> None:
    obj = a_policy({"resourceSelectors": [{"apiVersion": "v1", "kind": "A"}]}, labels={PP_LABEL: "mine"})
    response = call("/mutate-propagationpolicy", body(a_review(obj, namespace="team")))["response"]
    assert response["patchType"] == "JSONPatch" and response["status"] == {"metadata": {}, "code": 200}
    patched = check.apply_patch(obj, json.loads(base64.b64decode(response["patch"])))
    assert UUID.match(patched["metadata"]["labels"][PP_LABEL])
    assert patched["metadata"]["finalizers"] == ["karmada.io/propagation-policy-controller"]
    assert patched["spec"]["resourceSelectors"][0]["namespace"] == "team"


def test_mutation_without_changes_has_no_patch() -> None:
    obj = a_policy({"resourceSelectors": [{"apiVersion": "v1", "kind": "A", "namespace": "default"}],
                    "placement": {}})
    response = call("/mutate-propagationpolicy", body(a_review(obj, operation="UPDATE")))["response"]
    assert response["allowed"] is True and "patch" not in response and "patchType" not in response


def test_v1beta1_is_answered_in_kind() -> None:
    sent = a_review(a_policy({}), api_version="admission.k8s.io/v1beta1")
    got = call("/validate-propagationpolicy", body(sent))
    assert got["apiVersion"] == "admission.k8s.io/v1beta1"


@pytest.mark.parametrize(("data", "content_type", "code", "message"), [
    pytest.param(b"", "application/json", 400, "request body is empty", id="empty body"),
    pytest.param(b"{}", "text/plain", 400, "contentType=text/plain, expected application/json",
                 id="content type"),
    pytest.param(b"{}", None, 400, "contentType=, expected application/json", id="no content type"),
    pytest.param(b"x" * (review.MAX_REQUEST_BYTES + 1), "application/json", 413,
                 "request entity is too large; limit is 7340032 bytes", id="too large"),
    pytest.param(b"\x00garbage", "application/json", 400, "invalid JSON", id="not json"),
    pytest.param(b"[1, 2]", "application/json", 400, "cannot unmarshal array", id="json array"),
    pytest.param(b'{"request": {"uid": 5}}', "application/json", 400, "cannot unmarshal number",
                 id="uid type"),
    pytest.param(b'{"request": {"uid": "x"}}', "application/json", 400, "no content to decode",
                 id="no object"),
    pytest.param(b"{}", "application/json", 400, "no content to decode", id="no request"),
    pytest.param(b'{"request": {"uid": "x", "object": "str"}}', "application/json", 400,
                 "couldn't get version/kind", id="object is a string"),
    # 20,000 levels: past the recursion limit, within the decode budget (100,000 are refused with 413)
    pytest.param(b"[" * 20000 + b"]" * 20000, "application/json", 400, "", id="deep nesting"),
])
def test_bad_bodies_get_an_error_review(data: bytes, content_type: str | None, code: int,
                                        message: str) -> None:
    response = call("/validate-propagationpolicy", data, content_type)["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == code
    assert message in response["status"]["message"]
    assert response["status"]["message"]


@pytest.mark.parametrize(("obj", "fragment"), [
    pytest.param({**a_policy({}), "kind": "ClusterPropagationPolicy"}, "Kind=ClusterPropagationPolicy",
                 id="other kind"),
    pytest.param({**a_policy({}), "apiVersion": "apps/v1"}, "apps/v1", id="other group"),
    pytest.param({**a_policy({}), "apiVersion": "a/b/c"}, "unexpected GroupVersion string: a/b/c",
                 id="bad version"),
    pytest.param({**a_policy({}), "kind": 7}, "cannot unmarshal", id="kind not a string"),
    pytest.param(a_policy({"placement": "not-an-object"}), "Go struct field PropagationSpec.spec.placement",
                 id="field type"),
])
def test_object_decode_errors_are_400_and_echo_the_uid(obj: dict[str, Any], fragment: str) -> None:
    for path in ("/validate-propagationpolicy", "/mutate-propagationpolicy"):
        response = call(path, body(a_review(obj, uid="u-9")))["response"]
        assert response["uid"] == "u-9" and response["allowed"] is False
        assert response["status"]["code"] == 400 and fragment in response["status"]["message"]


@pytest.mark.parametrize("obj", [
    pytest.param({"metadata": a_policy({})["metadata"], "spec": {}}, id="no apiVersion or kind"),
    pytest.param({**a_policy({}), "apiVersion": "policy.karmada.io/"}, id="group without version"),
])
def test_missing_type_fields_default_to_the_endpoint_kind(obj: dict[str, Any]) -> None:
    response = call("/validate-propagationpolicy", body(a_review(obj, namespace="default")))["response"]
    assert response["allowed"] is True


def test_update_needs_an_old_object() -> None:
    sent = a_review(a_policy({}), operation="UPDATE")
    response = call("/validate-propagationpolicy", body(sent))["response"]
    assert response["status"]["code"] == 400 and "request.oldObject" in response["status"]["message"]


def test_unknown_path_is_a_404_review() -> None:
    response = call("/validate-nothing", body(a_review(a_policy({}))))["response"]
    assert response["status"]["code"] == 404 and response["allowed"] is False


def test_an_internal_error_denies(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: Any, **__: Any) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(review.rules, "validate_policy", broken)
    response = call("/validate-propagationpolicy", body(a_review(a_policy({}), uid="u-5")))["response"]
    status = {"metadata": {}, "code": 500, "message": "internal error: KeyError: 'boom'"}
    assert response == {"uid": "u-5", "allowed": False, "status": status}


def test_binding_endpoints() -> None:
    rb = {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding", "metadata": {"name": "b"},
          "spec": {"resource": {"apiVersion": "v1", "kind": "A", "name": "x"}}}
    response = call("/mutate-resourcebinding", body(a_review(rb)))["response"]
    patched = check.apply_patch(rb, json.loads(base64.b64decode(response["patch"])))
    assert UUID.match(patched["metadata"]["labels"]["resourcebinding.karmada.io/permanent-id"])
    assert patched["spec"] == rb["spec"]
    crb = {**rb, "kind": "ClusterResourceBinding"}
    response = call("/mutate-clusterresourcebinding", body(a_review(crb)))["response"]
    patched = check.apply_patch(crb, json.loads(base64.b64decode(response["patch"])))
    assert UUID.match(patched["metadata"]["labels"]["clusterresourcebinding.karmada.io/permanent-id"])
    rb["metadata"]["annotations"] = {"resourcebinding.karmada.io/dependencies": "{"}
    response = call("/validate-resourcebinding", body(a_review(rb)))["response"]
    assert response["status"]["code"] == 403
    assert response["status"]["message"].endswith("annotation value must be a valid JSON")


@pytest.mark.parametrize(("metadata", "operation", "expect_label"), [
    pytest.param({"name": "b", "labels": {"a": "b"}}, "CREATE", True, id="added beside other labels"),
    pytest.param({"name": "b", "labels": None}, "CREATE", True, id="null labels"),
    pytest.param(None, "CREATE", True, id="no metadata"),
    pytest.param({"labels": {"resourcebinding.karmada.io/permanent-id": "kept"}}, "CREATE", False,
                 id="already set"),
    pytest.param({"name": "b"}, "UPDATE", False, id="not on update"),
])
def test_binding_label_patch(metadata: dict[str, Any] | None, operation: str, expect_label: bool) -> None:
    rb: dict[str, Any] = {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding"}
    if metadata is not None:
        rb["metadata"] = metadata
    response = call("/mutate-resourcebinding", body(a_review(rb, operation=operation)))["response"]
    assert response["allowed"] is True
    ops = json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
    patched = check.apply_patch(rb, ops)
    labels = (patched.get("metadata") or {}).get("labels") or {}
    assert bool(ops) == expect_label
    if expect_label:
        assert UUID.match(labels["resourcebinding.karmada.io/permanent-id"])
        assert all(labels[k] == v for k, v in ((metadata or {}).get("labels") or {}).items())


def test_binding_with_a_wrong_field_type_is_a_decode_error() -> None:
    rb = {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding", "metadata": {"name": "b"},
          "spec": {"resource": {"apiVersion": "v1", "kind": "A", "name": "x"}, "replicas": "3"}}
    for path in ("/validate-resourcebinding", "/mutate-resourcebinding"):
        response = call(path, body(a_review(rb)))["response"]
        assert response["status"]["code"] == 400
        assert response["status"]["message"] == ("json: cannot unmarshal string into Go struct field "
                                                  "ResourceBindingSpec.spec.replicas of type int32")
