"""Slow clients against the webhook in the real write path (issue 23, finding 1).

kube-apiserver calls ``fleetsched webhook`` (the shipped configurations, ``failurePolicy: Fail``,
registered by URL) while 64 clients hold connections to the webhook, each sending a review's body
a byte at a time from the API server's own address. Every policy write used to be refused then
(the slow bodies held the 64 in-flight slots); now every valid write is admitted and an invalid one
is still denied with Karmada's message, so the webhook was asked, not bypassed.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from fleetsched.webhook.testing import SlowClients, WebhookProcess, make_certificates
from tests.e2e.test_webhook_admission import INVALID_PP, VALID_PP, registrations
from tests.support.controlplane import APIServer

WRITES = 20
POLICIES = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies"


@pytest.fixture(scope="module")
def registered(isolated_apiserver: APIServer,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[APIServer, WebhookProcess]]:
    cert_dir = tmp_path_factory.mktemp("webhook-slow-e2e-certs")
    ca_file = make_certificates(cert_dir)
    with WebhookProcess(cert_dir) as webhook:
        ca_bundle = base64.b64encode(ca_file.read_bytes()).decode()
        isolated_apiserver.kubectl("apply", "-f", "-", input=registrations(webhook.port, ca_bundle))
        deadline = time.monotonic() + 60
        while "denied the request" not in _create(isolated_apiserver, yaml.safe_load(INVALID_PP)):
            assert time.monotonic() < deadline, "the API server never called the webhook"
            time.sleep(0.5)
        yield isolated_apiserver, webhook


def _create(server: APIServer, policy: dict[str, Any]) -> str:
    """A dry-run create through both webhooks: "" when admitted, else the API server's message."""
    try:
        server.request("POST", f"{POLICIES}?dryRun=All", policy)
        return ""
    except urllib.error.HTTPError as exc:
        text = exc.read().decode(errors="replace")
    try:
        return str(json.loads(text)["message"]) or text
    except (ValueError, KeyError, TypeError):
        return text or "(empty answer)"


def test_policy_writes_are_admitted_while_64_slow_clients_hold_connections(
        registered: tuple[APIServer, WebhookProcess]) -> None:
    server, webhook = registered
    valid = yaml.safe_load(VALID_PP)
    with SlowClients(webhook.port, webhook.client_context(), 64) as slow:
        slow.wait_held()
        time.sleep(1.5)  # a standing attack: every slow body older than the eviction age
        failures = []
        for i in range(WRITES):
            valid["metadata"]["name"] = f"slow-{i}"
            message = _create(server, valid)
            if message:
                failures.append(message)
        denied = _create(server, yaml.safe_load(INVALID_PP))
        held = slow.held
    admitted = WRITES - len(failures)
    print(f"\npolicy writes admitted under 64 slow clients: {admitted} of {WRITES} "
          f"(slow connections opened {slow.opened}, ended {slow.ended})")
    assert admitted == WRITES, failures[:3]
    assert 'admission webhook "propagationpolicy.karmada.io" denied the request' in denied
    assert "clusterAffinities cannot co-exist with clusterAffinity" in denied
    assert held >= 32, "the slow clients were no longer in place"
