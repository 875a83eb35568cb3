"""The shipped webhook manifests agree with the server: paths, flags, ports and Karmada's settings."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.webhook import review, server, server_cmd

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


def _webhook_args(container: dict[str, Any]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    server_cmd.add_arguments(parser)
    return parser.parse_args(container["args"][1:])


def _mebibytes(quantity: str) -> float:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024}
    return float(quantity[:-2]) * units[quantity[-2:]]


def test_the_memory_limit_covers_the_bound_the_flags_give() -> None:
    container = documents()["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    args = _webhook_args(container)
    mib = 1024 * 1024
    bound = (40 * mib  # baseline RSS, bench/webhook.py
             + args.max_large_requests_in_flight * args.max_review_memory
             + args.max_requests_reading * server.LARGE_BODY_BYTES  # small bodies arriving or answered
             + args.max_review_memory) / mib  # one small body decoded on the event loop
    limit = _mebibytes(container["resources"]["limits"]["memory"])
    assert limit >= bound, f"limit {limit} MiB is under the {bound:.0f} MiB the flags allow"
    assert _mebibytes(container["resources"]["requests"]["memory"]) <= limit


API_SERVERS = [("karmada-system", {"app": "karmada-apiserver"}),
               ("kube-system", {"component": "kube-apiserver"})]
NAME_LABEL = "kubernetes.io/metadata.name"


def _https_sources(policy: dict[str, Any], port: int) -> list[tuple[str, dict[str, str]]]:
    """The (namespace, pod labels) pairs the policy admits to ``port``. Each `from` entry must hold
    both selectors: a namespaceSelector alone, or `{}`, would admit every pod of a namespace (or of
    every namespace), and a podSelector beside an empty namespaceSelector a label in any namespace."""
    rules = [rule for rule in policy["spec"]["ingress"] if any(p["port"] == port for p in rule["ports"])]
    assert len(rules) == 1, "one rule opens the HTTPS port"
    pairs = []
    for peer in rules[0]["from"]:
        assert set(peer) == {"namespaceSelector", "podSelector"}, peer
        namespaces = peer["namespaceSelector"]
        assert set(namespaces) == {"matchLabels"}, namespaces
        assert set(namespaces["matchLabels"]) == {NAME_LABEL}, namespaces
        assert set(peer["podSelector"]) == {"matchLabels"} and peer["podSelector"]["matchLabels"], peer
        pairs.append((namespaces["matchLabels"][NAME_LABEL], peer["podSelector"]["matchLabels"]))
    return pairs


def test_the_network_policy_admits_only_api_servers_to_the_https_port() -> None:
    docs = documents()
    deployment, policy = docs["Deployment"], docs["NetworkPolicy"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    args = _webhook_args(deployment["spec"]["template"]["spec"]["containers"][0])
    assert {rule["ports"][0]["port"] for rule in policy["spec"]["ingress"]} == {args.port, 8080}
    assert _https_sources(policy, args.port) == API_SERVERS


@pytest.mark.parametrize("variant", ["webhook", "webhook/cert-manager", "webhook/client-auth",
                                     "install tree"])
def test_every_install_mode_ships_the_same_api_server_only_policy(variant: str, tmp_path: Path) -> None:
    """The webhook alone (and its cert-manager / client-auth variants) and the whole standalone
    install render the same policy: API server pods of their own namespace only."""
    from tests.unit.test_manifests import kustomize, prepared_tree

    directory = prepared_tree(tmp_path) if variant == "install tree" else BASE.parents[1] / variant
    docs = kustomize(directory)
    mine = [d for d in docs if d["metadata"]["name"] == "fleetsched-webhook"]
    policies = [d for d in mine if d["kind"] == "NetworkPolicy"]
    assert len(policies) == 1
    deployment = next(d for d in mine if d["kind"] == "Deployment")
    assert policies[0]["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    args = _webhook_args(deployment["spec"]["template"]["spec"]["containers"][0])
    assert _https_sources(policies[0], args.port) == API_SERVERS


def test_the_client_auth_variant_mounts_the_ca_it_names() -> None:
    from tests.unit.test_manifests import kustomize

    docs = kustomize(BASE.parent / "client-auth")
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args = _webhook_args(container)
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert Path(args.client_ca_file).parent == Path(mounts["client-ca"])
    volume = next(v for v in pod["volumes"] if v["name"] == "client-ca")
    assert volume["configMap"]["name"] == "fleetsched-webhook-client-ca"
    # The kubelet presents no client certificate: readiness is asked on the plain-HTTP probe port.
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 8000}
    assert args.health_probe_bind_address == ":8000"
