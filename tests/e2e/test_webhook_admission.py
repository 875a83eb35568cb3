"""The webhook in the real write path: kube-apiserver calls ``fleetsched webhook`` over HTTPS.

The shipped configurations (manifests/webhook) are registered with ``url: https://127.0.0.1:PORT/...``
and the test CA as caBundle. ``kubectl apply`` of an invalid policy then fails with Karmada's message,
and a valid one is stored with the CRD defaults and the webhook's defaults applied.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.webhook.testing import WebhookProcess, make_certificates
from tests.support.controlplane import APIServer

ROOT = Path(__file__).resolve().parents[2]
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")

INVALID_PP = """
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: both-affinities, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: nginx}]
  placement:
    clusterAffinity: {clusterNames: [member1]}
    clusterAffinities: [{affinityName: primary, clusterNames: [member2]}]
"""
VALID_PP = """
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: nginx, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: nginx}]
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
    replicaScheduling: {}
    spreadConstraints: [{maxGroups: 2}]
"""


def registrations(port: int, ca_bundle: str) -> str:
    """The shipped webhook configurations, pointed at the local server by URL."""
    text = (ROOT / "manifests" / "webhook" / "base" / "webhook-configuration.yaml").read_text()
    docs = [d for d in yaml.safe_load_all(text) if d]
    for doc in docs:
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}
    return yaml.safe_dump_all(docs)


def apply_error(server: APIServer, manifest: str) -> str:
    with pytest.raises(RuntimeError) as exc:
        server.kubectl("apply", "-f", "-", input=manifest)
    return str(exc.value)


@pytest.fixture(scope="module")
def admission(isolated_apiserver: APIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[APIServer]:
    cert_dir = tmp_path_factory.mktemp("webhook-e2e-certs")
    ca_file = make_certificates(cert_dir)
    with WebhookProcess(cert_dir) as webhook:
        ca_bundle = base64.b64encode(ca_file.read_bytes()).decode()
        isolated_apiserver.kubectl("apply", "-f", "-", input=registrations(webhook.port, ca_bundle))
        # The API server picks registrations up asynchronously: wait until a denial comes back.
        deadline = time.monotonic() + 60
        while True:
            try:
                isolated_apiserver.kubectl("apply", "--dry-run=server", "-f", "-", input=INVALID_PP)
            except RuntimeError as exc:
                if "denied the request" in str(exc):
                    break
            if time.monotonic() > deadline:
                log = webhook.log_path.read_text()[-2000:] if webhook.log_path else ""
                raise AssertionError(f"webhook never called; server log:\n{log}")
            time.sleep(0.5)
        yield isolated_apiserver


def get(server: APIServer, *args: str) -> dict[str, Any]:
    return json.loads(server.kubectl("get", *args, "-o", "json"))


def test_invalid_policy_is_refused_with_karmadas_message(admission: APIServer) -> None:
    message = apply_error(admission, INVALID_PP)
    assert (
        'admission webhook "propagationpolicy.karmada.io" denied the request: spec.placement: Invalid value: '
        '{"clusterAffinity":{"clusterNames":["member1"]},"clusterAffinities":[{"affinityName":"primary",'
        '"clusterNames":["member2"]}]}: clusterAffinities cannot co-exist with clusterAffinity'
    ) in message
    assert admission.kubectl("get", "pp", "both-affinities", "-n", "default", "--ignore-not-found") == ""


def test_valid_policy_is_stored_with_defaults(admission: APIServer) -> None:
    admission.kubectl("apply", "-f", "-", input=VALID_PP)
    stored = get(admission, "pp", "nginx", "-n", "default")
    assert UUID.match(stored["metadata"]["labels"]["propagationpolicy.karmada.io/permanent-id"])
    assert stored["metadata"]["finalizers"] == ["karmada.io/propagation-policy-controller"]
    spec = stored["spec"]
    assert spec["resourceSelectors"] == [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx",
                                          "namespace": "default"}]
    assert spec["placement"]["replicaScheduling"] == {"replicaSchedulingType": "Divided",
                                                      "replicaDivisionPreference": "Weighted"}
    constraint = {"spreadByField": "cluster", "maxGroups": 2, "minGroups": 1}
    assert spec["placement"]["spreadConstraints"] == [constraint]
    assert (spec["priority"], spec["preemption"], spec["conflictResolution"], spec["schedulerName"]) == (
        0, "Never", "Abort", "default-scheduler")


def test_scheduler_name_is_immutable(admission: APIServer) -> None:
    admission.kubectl("apply", "-f", "-", input=VALID_PP.replace("name: nginx,", "name: immutable,"))
    message = apply_error(admission, VALID_PP.replace("name: nginx,", "name: immutable,")
                          + "  schedulerName: other-scheduler\n")
    assert ('admission webhook "propagationpolicy.karmada.io" denied the request: '
            "the schedulerName should not be updated") in message


def test_cluster_policy_rules_and_defaults(admission: APIServer) -> None:
    bad = """
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: lt-toleration}
spec:
  resourceSelectors: [{apiVersion: v1, kind: Namespace, name: team-a}]
  placement:
    clusterTolerations: [{key: k, operator: Lt, value: "1", effect: NoSchedule}]
"""
    message = apply_error(admission, bad)
    assert ('admission webhook "clusterpropagationpolicy.karmada.io" denied the request: '
            'spec.placement.clusterTolerations[0].operator: Unsupported value: "Lt": supported values: "", '
            '"Exists", "Equal"') in message
    admission.kubectl("apply", "-f", "-", input=bad.replace("operator: Lt", "operator: Equal"))
    stored = get(admission, "cpp", "lt-toleration")
    assert UUID.match(stored["metadata"]["labels"]["clusterpropagationpolicy.karmada.io/permanent-id"])
    assert stored["metadata"]["finalizers"] == ["karmada.io/cluster-propagation-policy-controller"]
    assert "namespace" not in stored["spec"]["resourceSelectors"][0]


def test_finalizer_holds_deletion_until_removed(admission: APIServer) -> None:
    admission.kubectl("apply", "-f", "-", input=VALID_PP.replace("name: nginx,", "name: doomed,"))
    admission.kubectl("delete", "pp", "doomed", "-n", "default", "--wait=false")
    assert get(admission, "pp", "doomed", "-n", "default")["metadata"]["deletionTimestamp"]
    # A metadata-only update passes through both webhooks again (webhook.md §1).
    admission.kubectl("patch", "pp", "doomed", "-n", "default", "--type=json",
                      "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    assert admission.kubectl("get", "pp", "doomed", "-n", "default", "--ignore-not-found") == ""
