"""The shipped webhook manifests agree with the server: paths, flags, ports and Karmada's settings."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml

from fleetsched.webhook import review, server_cmd

BASE = Path(__file__).resolve().parents[3] / "manifests" / "webhook" / "base"


def documents() -> dict[str, dict[str, Any]]:
    docs: dict[str, dict[str, Any]] = {}
    for path in sorted(BASE.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") != "Kustomization":
                docs[doc["kind"]] = doc
    return docs


def test_every_registered_path_is_served_with_karmadas_settings() -> None:
    docs = documents()
    seen = []
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for hook in docs[kind]["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            endpoint = review.ENDPOINTS[path]
            assert endpoint.mutating == (kind == "MutatingWebhookConfiguration")
            assert hook["failurePolicy"] == "Fail" and hook["timeoutSeconds"] == 3
            assert hook["admissionReviewVersions"] == ["v1"]
            assert hook["rules"][0]["apiVersions"] == ["*"]
            assert hook["name"] == f"{endpoint.kind.lower()}.karmada.io"
            seen.append(path)
    policy_paths = {p for p, e in review.ENDPOINTS.items() if "propagationpolicy" in p}
    assert policy_paths <= set(seen)
    validating = {h["name"]: h for h in docs["ValidatingWebhookConfiguration"]["webhooks"]}
    assert validating["resourcebinding.karmada.io"]["sideEffects"] == "NoneOnDryRun"
    assert "clusterresourcebinding.karmada.io" not in validating


def test_deployment_arguments_are_flags_the_server_accepts() -> None:
    docs = documents()
    container = docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "fleetsched:latest" and container["args"][0] == "webhook"
    parser = argparse.ArgumentParser()
    server_cmd.add_arguments(parser)
    args = parser.parse_args(container["args"][1:])
    probe = container["readinessProbe"]["httpGet"]
    assert probe == {"path": "/readyz", "port": args.port, "scheme": "HTTPS"}
    mount = container["volumeMounts"][0]["mountPath"]
    assert args.cert_dir == mount
    service = docs["Service"]
    https = next(p for p in service["spec"]["ports"] if p["name"] == "https")
    assert https == {"name": "https", "port": 443, "targetPort": args.port, "protocol": "TCP"}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for hook in docs[kind]["webhooks"]:
            ref = hook["clientConfig"]["service"]
            target = (ref["namespace"], ref["name"], ref["port"])
            assert target == ("fleetsched-system", "fleetsched-webhook", 443)
