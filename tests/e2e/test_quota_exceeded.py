"""A binding write refused for quota becomes Karmada's ``QuotaExceeded`` condition.

Karmada's FederatedResourceQuota admission refuses a ResourceBinding whose placement would pass a
quota with a 403 whose reason is ``QuotaExceeded``; karmada-scheduler (``getConditionByError``)
then writes ``Scheduled=False`` reason QuotaExceeded with the API's message and retries. Here a
real kube-apiserver calls a loopback HTTPS admission webhook that refuses every spec write of one
binding that way (status writes go to the status subresource, which the webhook does not match).
"""

from __future__ import annotations

import base64
import http.server
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.webhook.testing import make_certificates
from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import (
    apply_with_status,
    create_objects,
    divided_binding,
    get_json,
    ready_cluster,
    scheduled_condition,
)
from tests.support.processes import SchedulerProcess

NAMESPACE = "quota"
REFUSED = "over-quota"
QUOTA_MESSAGE = "exceeded quota: team-a, requested: cpu=4, used: cpu=8, limited: cpu=10"


class _Admission(http.server.BaseHTTPRequestHandler):
    """Refuses the spec writes of the ResourceBinding named REFUSED as a quota admission would."""

    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        refused = request.get("name") == REFUSED
        response: dict[str, Any] = {"uid": request["uid"], "allowed": not refused}
        if refused:
            response["status"] = {"code": 403, "reason": "QuotaExceeded", "message": QUOTA_MESSAGE}
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": response}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test asserts on the API's answers."""


@pytest.fixture
def quota_admission(isolated_apiserver: APIServer, tmp_path: Path) -> Iterator[APIServer]:
    ca_file = make_certificates(tmp_path / "certs")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "certs" / "tls.crt", tmp_path / "certs" / "tls.key")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Admission)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    registration = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "test-quota"},
        "webhooks": [{
            "name": "quota.test.fleetsched.io",
            "clientConfig": {"url": f"https://127.0.0.1:{server.server_port}/",
                             "caBundle": base64.b64encode(ca_file.read_bytes()).decode()},
            "rules": [{"apiGroups": ["work.karmada.io"], "apiVersions": ["v1alpha2"],
                       "operations": ["UPDATE"], "resources": ["resourcebindings"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
        }],
    }
    isolated_apiserver.kubectl("apply", "-f", "-", input=yaml.safe_dump(registration))
    try:
        yield isolated_apiserver
    finally:
        isolated_apiserver.kubectl("delete", "validatingwebhookconfiguration", "test-quota",
                                   "--ignore-not-found")
        server.shutdown()
        server.server_close()


def test_a_write_refused_for_quota_is_karmadas_quota_exceeded_condition(
    quota_admission: APIServer, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = quota_admission
    server.kubectl("create", "namespace", NAMESPACE)
    apply_with_status(server, [ready_cluster("q1", 50), ready_cluster("q2", 50)])
    proc = start_scheduler(server, "--leader-elect=false", name="quota")
    create_objects(server, [divided_binding(name, NAMESPACE, 4, ["q1", "q2"]) for name in (REFUSED, "fits")])

    def condition(name: str) -> dict[str, Any]:
        binding = get_json(server, "resourcebinding", "-n", NAMESPACE, name)
        return dict(scheduled_condition(binding) or {})

    wait_until(lambda: condition("fits").get("status") == "True", timeout=60, message=proc.log_tail)
    wait_until(lambda: condition(REFUSED).get("reason") == "QuotaExceeded", timeout=60, message=proc.log_tail)
    refused = condition(REFUSED)
    assert refused["status"] == "False"
    assert QUOTA_MESSAGE in refused["message"], refused["message"]
    assert "denied the request" in refused["message"]  # the API server's own words, as Karmada shows them
    binding = get_json(server, "resourcebinding", "-n", NAMESPACE, REFUSED)
    assert not binding["spec"].get("clusters")  # nothing was placed
    # A Warning Event with the same message, and the binding is retried (backoff), not dropped.
    events = json.loads(server.kubectl("get", "events", "-n", NAMESPACE, "-o", "json"))["items"]
    assert any(e["reason"] == "ScheduleBindingFailed" and QUOTA_MESSAGE in e["message"]
               and e["involvedObject"]["name"] == REFUSED for e in events)
    wait_until(lambda: len(proc.log_events("binding_quota_exceeded")) >= 2, timeout=30, message=proc.log_tail)
