"""Binding conversion v1alpha1 ⇄ v1alpha2 behind ``/convert`` (api.md §4.5)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fleetsched.webhook import conversion

V1ALPHA1 = {
    "apiVersion": "work.karmada.io/v1alpha1", "kind": "ResourceBinding",
    "metadata": {"name": "web-deployment", "namespace": "default"},
    "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                          "name": "web", "resourceVersion": "7", "replicas": 3,
                          "resourcePerReplicas": {"cpu": "100m"}},
             "clusters": [{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 1}]},
    "status": {"conditions": [{"type": "Scheduled", "status": "True"}],
               "aggregatedStatus": [{"clusterName": "m1", "applied": True, "health": "Healthy"}]},
}


def test_v1alpha1_to_v1alpha2_moves_replicas_and_requests() -> None:
    out = conversion.convert_binding(V1ALPHA1, "work.karmada.io/v1alpha2")
    assert out["apiVersion"] == "work.karmada.io/v1alpha2"
    assert out["spec"]["replicas"] == 3
    assert out["spec"]["replicaRequirements"] == {"resourceRequest": {"cpu": "100m"}}
    assert out["spec"]["resource"] == {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                                       "name": "web", "resourceVersion": "7"}
    assert out["spec"]["clusters"] == V1ALPHA1["spec"]["clusters"] and out["status"] == V1ALPHA1["status"]
    assert V1ALPHA1["spec"]["resource"]["replicas"] == 3  # the input is untouched


def test_v1alpha2_to_v1alpha1_drops_what_has_no_counterpart() -> None:
    v2 = conversion.convert_binding(V1ALPHA1, "work.karmada.io/v1alpha2")
    v2["spec"]["placement"] = {"clusterAffinity": {}}
    v2["spec"]["clusters"][0]["components"] = [{"name": "x"}]
    back = conversion.convert_binding(v2, "work.karmada.io/v1alpha1")
    expected = json.loads(json.dumps(V1ALPHA1))
    expected["status"]["aggregatedStatus"][0].pop("health")
    assert back == expected


def test_same_version_is_returned_unchanged() -> None:
    assert conversion.convert_binding(V1ALPHA1, "work.karmada.io/v1alpha1") == V1ALPHA1


def review(objects: list[Any], desired: str = "work.karmada.io/v1alpha2") -> bytes:
    return json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                       "request": {"uid": "c-1", "desiredAPIVersion": desired, "objects": objects}}).encode()


def test_review_success_and_failure() -> None:
    status, answer = conversion.handle(review([V1ALPHA1]), "application/json")
    assert status == 200 and answer["kind"] == "ConversionReview"
    assert answer["response"]["uid"] == "c-1" and answer["response"]["result"] == {"status": "Success"}
    assert answer["response"]["convertedObjects"][0]["spec"]["replicas"] == 3
    _, failed = conversion.handle(review([{"apiVersion": "v1", "kind": "Pod"}]), "application/json")
    assert failed["response"]["result"]["status"] == "Failure" and "cannot convert v1, Kind=Pod" in (
        failed["response"]["result"]["message"])
    _, bad_target = conversion.handle(review([V1ALPHA1], desired="work.karmada.io/v9"), "application/json")
    assert "unsupported desiredAPIVersion" in bad_target["response"]["result"]["message"]


@pytest.mark.parametrize(("body", "content_type"), [
    pytest.param(b"{", "application/json", id="not json"),
    pytest.param(b"[]", "application/json", id="no request"),
    pytest.param(b"{}", "text/plain", id="content type"),
])
def test_bad_conversion_bodies(body: bytes, content_type: str) -> None:
    status, answer = conversion.handle(body, content_type)
    assert status == 400 and answer["response"]["result"]["status"] == "Failure"
