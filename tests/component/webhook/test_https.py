"""The webhook as the API server meets it: real HTTPS on loopback, real AdmissionReview bodies."""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import time
import urllib.request
from typing import Any

import pytest

from fleetsched.webhook.testing import PP_LABEL, WebhookProcess, a_policy, a_review, body, make_certificates


def post(webhook: WebhookProcess, path: str, payload: bytes, *, content_type: str = "application/json",
         conn: http.client.HTTPSConnection | None = None) -> tuple[int, dict[str, Any]]:
    own = conn is None
    conn = conn or http.client.HTTPSConnection("127.0.0.1", webhook.port, context=webhook.client_context(),
                                               timeout=10)
    try:
        conn.request("POST", path, body=payload, headers={"Content-Type": content_type})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, json.loads(data)
    finally:
        if own:
            conn.close()


def test_validating_denial_over_https(webhook: WebhookProcess) -> None:
    obj = a_policy({"placement": {"clusterTolerations": [{"operator": "Lt"}]}})
    status, got = post(webhook, "/validate-propagationpolicy", body(a_review(obj, uid="abc")))
    assert status == 200
    assert got["apiVersion"] == "admission.k8s.io/v1" and got["kind"] == "AdmissionReview"
    assert got["response"]["uid"] == "abc" and got["response"]["allowed"] is False
    assert got["response"]["status"]["message"] == (
        'spec.placement.clusterTolerations[0].operator: Unsupported value: "Lt": supported values: "", '
        '"Exists", "Equal"')


def test_mutating_patch_over_https(webhook: WebhookProcess) -> None:
    obj = a_policy({"resourceSelectors": [{"apiVersion": "v1", "kind": "A"}]},
                   kind="ClusterPropagationPolicy",
                   labels={})
    _, got = post(webhook, "/mutate-clusterpropagationpolicy", body(a_review(obj)))
    ops = json.loads(base64.b64decode(got["response"]["patch"]))
    assert {"op": "add", "path": "/metadata/finalizers",
            "value": ["karmada.io/cluster-propagation-policy-controller"]} in ops


def test_certificate_verifies_for_ip_and_names(webhook: WebhookProcess) -> None:
    for host in ("127.0.0.1", "localhost"):
        with urllib.request.urlopen(f"https://{host}:{webhook.port}/readyz", context=webhook.client_context(),
                                    timeout=5) as resp:
            assert resp.read() == b"ok"


def test_tls_below_minimum_version_is_refused(webhook: WebhookProcess) -> None:
    context = webhook.client_context()
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    with socket.create_connection(("127.0.0.1", webhook.port), timeout=5) as raw, pytest.raises(ssl.SSLError):
        context.wrap_socket(raw, server_hostname="127.0.0.1")


def test_keep_alive_serves_many_reviews_on_one_connection(webhook: WebhookProcess) -> None:
    context = webhook.client_context()
    conn = http.client.HTTPSConnection("127.0.0.1", webhook.port, context=context, timeout=10)
    try:
        for i in range(20):
            _, got = post(webhook, "/validate-propagationpolicy", body(a_review(a_policy({}), uid=f"u{i}")),
                          conn=conn)
            assert got["response"]["uid"] == f"u{i}" and got["response"]["allowed"] is True
        assert conn.sock is not None
    finally:
        conn.close()


@pytest.mark.parametrize(("payload", "content_type", "code"), [
    pytest.param(b"not json at all", "application/json", 400, id="not json"),
    pytest.param(b'{"apiVersion":"admission.k8s.io/v1"}', "text/yaml", 400, id="content type"),
    pytest.param(b"\xff\xfe" * 1000, "application/json", 400, id="binary garbage"),
    pytest.param(b'{"request":{"uid":"q","object":{"spec":{"placement":[]}}}}', "application/json", 400,
                 id="wrong field type"),
])
def test_bad_bodies_get_a_review_and_the_server_lives_on(webhook: WebhookProcess, payload: bytes,
                                                         content_type: str, code: int) -> None:
    status, got = post(webhook, "/validate-propagationpolicy", payload, content_type=content_type)
    assert status == 200
    assert got["response"]["allowed"] is False and got["response"]["status"]["code"] == code
    assert got["response"]["status"]["message"]
    _, again = post(webhook, "/validate-propagationpolicy", body(a_review(a_policy({}))))
    assert again["response"]["allowed"] is True


def test_eight_megabytes_are_refused_with_413(webhook: WebhookProcess) -> None:
    payload = b'{"request": {"uid": "big", "object": {"x": "' + b"a" * (8 * 1024 * 1024) + b'"}}}'
    status, got = post(webhook, "/validate-propagationpolicy", payload)
    assert status == 200 and got["response"]["status"]["code"] == 413
    _, again = post(webhook, "/validate-propagationpolicy", body(a_review(a_policy({}))))
    assert again["response"]["allowed"] is True


def test_conversion_endpoint(webhook: WebhookProcess) -> None:
    binding = {"apiVersion": "work.karmada.io/v1alpha1", "kind": "ResourceBinding", "metadata": {"name": "b"},
               "spec": {"resource": {"apiVersion": "v1", "kind": "A", "name": "x", "replicas": 2}}}
    sent = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "conv", "desiredAPIVersion": "work.karmada.io/v1alpha2", "objects": [binding]}}
    status, got = post(webhook, "/convert", json.dumps(sent).encode())
    assert status == 200 and got["response"]["uid"] == "conv"
    assert got["response"]["convertedObjects"][0]["spec"]["replicas"] == 2


def test_unknown_path_is_404(webhook: WebhookProcess) -> None:
    conn = http.client.HTTPSConnection("127.0.0.1", webhook.port, context=webhook.client_context(), timeout=5)
    conn.request("POST", "/validate-nothing", body=b"{}", headers={"Content-Type": "application/json"})
    assert conn.getresponse().status == 404
    conn.close()


def test_health_and_metrics_ports(webhook: WebhookProcess) -> None:
    post(webhook, "/validate-propagationpolicy", body(a_review(a_policy({}))))
    for path in ("/readyz", "/healthz"):
        with urllib.request.urlopen(f"http://127.0.0.1:{webhook.probe_port}{path}", timeout=5) as resp:
            assert resp.status == 200
    with urllib.request.urlopen(f"http://127.0.0.1:{webhook.metrics_port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    counter = 'controller_runtime_webhook_requests_total{code="200",webhook="/validate-propagationpolicy"}'
    assert counter in text
    assert "controller_runtime_webhook_latency_seconds_bucket" in text


def test_requests_are_logged_as_json_events(webhook: WebhookProcess) -> None:
    post(webhook, "/validate-propagationpolicy", body(a_review(a_policy({}, labels={}), uid="logged-uid")))
    assert webhook.log_path is not None
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        lines = webhook.log_path.read_text().splitlines()
        events = [json.loads(line) for line in lines if line.startswith("{")]
        mine = [e for e in events if e.get("uid") == "logged-uid"]
        if mine:
            assert mine[0]["event"] == "admission_reviewed" and mine[0]["allowed"] is False
            assert mine[0]["code"] == 403 and PP_LABEL in mine[0]["message"]
            return
        time.sleep(0.1)
    raise AssertionError("no admission_reviewed event for the request")


def test_rotated_certificate_is_picked_up(webhook: WebhookProcess) -> None:
    old_ca = webhook.client_context()
    make_certificates(webhook.cert_dir)  # new CA and key pair in place
    new_ca = webhook.client_context()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{webhook.base_url}/readyz", context=new_ca, timeout=5):
                break
        except OSError:
            time.sleep(0.2)
    else:
        raise AssertionError("the rotated certificate was not served")
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{webhook.base_url}/readyz", context=old_ca, timeout=5)


def test_sigterm_stops_cleanly(tmp_path: object) -> None:
    from pathlib import Path

    cert_dir = Path(str(tmp_path))
    make_certificates(cert_dir)
    process = WebhookProcess(cert_dir).start()
    assert process.stop() == 0


def test_missing_certificate_fails_with_a_message(tmp_path: object) -> None:
    from pathlib import Path

    process = WebhookProcess(Path(str(tmp_path)))
    with pytest.raises(RuntimeError, match="exited with 2"):
        process.start(timeout=10)
