"""The Helm chart's rendering of each mode, applied by server-side dry run to a real kube-apiserver.

``helm template`` (helm built from its Go module by hack/helm.sh) for standalone (generated
certificates, two estimators, sharded, both opt-in kinds), standalone with cert-manager,
beside Karmada (sharded) and instead of karmada-scheduler; each rendering goes through
``kubectl apply --server-side --dry-run=server``: the apiserver's schema validation, defaulting
and admission see every object. The chart's own crds/ are applied first, as ``helm install`` does.
cert-manager's and the Prometheus Operator's kinds are left out of the dry run (no CRDs for them
here) and checked as rendered.
"""

from __future__ import annotations

import pytest
import yaml

from tests.support.controlplane import APIServer
from tests.support.helm import CHART, helm, template_text

pytestmark = pytest.mark.e2e

MODES = [
    pytest.param("fleetsched-system", [
        "estimators.members[0].name=member1", "estimators.members[1].name=member2",
        "sharding.enabled=true", "controller.propagateSecrets=true", "controller.propagateRBAC=true",
        "scheduler.extraArgs={--v=4,--rate-limiter-qps=50}", "monitoring.enabled=true",
    ], id="standalone, estimators, sharded, opt-in kinds"),
    pytest.param("fleetsched-certs", ["certificates.source=cert-manager"], id="standalone with cert-manager"),
    pytest.param("karmada-system", ["mode=besideKarmada", "sharding.enabled=true"],
                 id="beside Karmada, sharded"),
    pytest.param("karmada-system", ["mode=insteadOfKarmada"], id="instead of karmada-scheduler"),
]


@pytest.fixture(scope="module")
def server(isolated_apiserver: APIServer) -> APIServer:
    names = isolated_apiserver.apply_crds(CHART / "crds")
    assert len(names) == len(list((CHART / "crds").glob("*.yaml")))
    for namespace in ("fleetsched-system", "fleetsched-certs"):
        isolated_apiserver.kubectl("create", "namespace", namespace)
    return isolated_apiserver


@pytest.mark.parametrize(("namespace", "values"), MODES)
def test_each_mode_passes_a_server_side_dry_run(server: APIServer, namespace: str, values: list[str]) -> None:
    rendered = template_text(*values, namespace=namespace).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    no_crds = ("cert-manager.io/", "monitoring.coreos.com/")
    cert_manager = [d for d in docs if d["apiVersion"].startswith(no_crds)]
    applied = [d for d in docs if d not in cert_manager]
    assert applied
    out = server.kubectl("apply", "--server-side", "--dry-run=server", "--field-manager=helm-chart-test",
                         "-f", "-", input=yaml.safe_dump_all(applied))
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == len(applied), out
    assert all(line.endswith("serverside-applied (server dry run)") for line in lines), out
    for doc in applied:
        assert any(line.split()[0].endswith(f"/{doc['metadata']['name']}") for line in lines), doc["metadata"]
    if "certificates.source=cert-manager" in values:
        assert sorted(d["kind"] for d in cert_manager) == ["Certificate", "Certificate", "Issuer", "Issuer"]
    if "monitoring.enabled=true" in values:
        assert sorted(d["kind"] for d in cert_manager) == ["PrometheusRule", "ServiceMonitor"]
    # a dry run persists nothing
    assert server.kubectl("get", "deployments", "-n", namespace, "-o", "name") == ""


def test_a_bad_object_is_refused_by_the_dry_run(server: APIServer) -> None:
    """The dry run is a real check: the same rendering with one schema error is refused."""
    rendered = template_text("mode=besideKarmada", namespace="karmada-system").stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    deployment = next(d for d in docs if d["kind"] == "Deployment"
                      and d["metadata"]["name"] == "fleetsched-scheduler")
    deployment["spec"]["replicas"] = "two"
    with pytest.raises(RuntimeError, match="replicas") as refused:
        server.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-",
                       input=yaml.safe_dump_all(docs))
    assert "fleetsched-scheduler" in str(refused.value)


def test_an_upgrade_keeps_the_certificate_authorities(server: APIServer) -> None:
    """The CAs are looked up in the cluster (helm's ``lookup``, live with --dry-run=server): an
    installed CA signs the new certificates, so an upgrade does not break the trust already given."""
    first = [d for d in yaml.safe_load_all(template_text(namespace="fleetsched-system").stdout) if d]
    cas = [d for d in first if d["kind"] == "Secret" and d["metadata"]["name"].endswith("-ca")]
    assert sorted(d["metadata"]["name"] for d in cas) == ["fleetsched-estimator-ca", "fleetsched-webhook-ca"]
    for ca in cas:  # as `helm install` leaves them: owned by the release
        ca["metadata"]["annotations"] = {"meta.helm.sh/release-name": "fleetsched",
                                         "meta.helm.sh/release-namespace": "fleetsched-system"}
    server.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(cas))
    try:
        again = helm("template", "fleetsched", str(CHART), "--namespace", "fleetsched-system",
                     "--dry-run=server", f"--kubeconfig={server.kubeconfig}").stdout
        docs = [d for d in yaml.safe_load_all(again) if d]
        secrets = {d["metadata"]["name"]: d["data"] for d in docs if d["kind"] == "Secret"}
        for ca in cas:
            assert secrets[ca["metadata"]["name"]] == ca["data"]
        bundles = {w["clientConfig"]["caBundle"] for d in docs if d["kind"].endswith("WebhookConfiguration")
                   for w in d["webhooks"]}
        assert bundles == {cas[1]["data"]["tls.crt"]}
        fresh = [d for d in yaml.safe_load_all(template_text(namespace="fleetsched-system").stdout) if d]
        assert {d["metadata"]["name"]: d["data"] for d in fresh if d["kind"] == "Secret"}[
            "fleetsched-webhook-ca"] != cas[1]["data"], "without the cluster, a new CA each time"
    finally:
        server.kubectl("delete", "secret", "-n", "fleetsched-system", *[d["metadata"]["name"] for d in cas])
