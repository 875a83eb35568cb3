"""The Helm chart on a real kube-apiserver: every rendering by server-side dry run, and installs.

``helm template`` (helm built from its Go module by hack/helm.sh) of the chart's defaults and of each
chart-testing values set (charts/fleetsched/ci/*-values.yaml: standalone with every option,
standalone with cert-manager, beside Karmada sharded, instead of karmada-scheduler); each rendering
goes through ``kubectl apply --server-side --dry-run=server``: the apiserver's schema validation
(the OpenAPI of the real kube-apiserver), defaulting and admission see every object. The chart's
own crds/ are applied first, as ``helm install`` does. cert-manager's and the Prometheus Operator's
kinds are left out of the dry run (no CRDs for them here) and checked as rendered.

Then what chart-testing's ``ct install`` does, with helm itself: ``helm install`` of two releases in
two namespaces, side by side (pods do not run here: the release's objects are checked), and the
webhook configurations a dev-up or a kustomize install left behind.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from fleetsched.webhook.testing import make_certificates
from tests.support.controlplane import APIServer
from tests.support.helm import CHART, CI_VALUES, IMAGE, ROOT, helm, template_text

pytestmark = pytest.mark.e2e

NAMESPACES = {"standalone-everything": "fleetsched-system", "cert-manager": "fleetsched-certs",
              "beside-karmada": "karmada-system", "instead-of-karmada": "karmada-system"}
MODES = [pytest.param("fleetsched-system", None, id="defaults")] + [
    pytest.param(NAMESPACES[path.name.removesuffix("-values.yaml")], path, id=path.name)
    for path in CI_VALUES]


def test_every_ci_values_file_is_dry_run() -> None:
    assert sorted(p.name.removesuffix("-values.yaml") for p in CI_VALUES) == sorted(NAMESPACES)


@pytest.fixture(scope="module")
def server(isolated_apiserver: APIServer) -> APIServer:
    names = isolated_apiserver.apply_crds(CHART / "crds")
    assert len(names) == len(list((CHART / "crds").glob("*.yaml")))
    for namespace in ("fleetsched-system", "fleetsched-certs"):
        isolated_apiserver.kubectl("create", "namespace", namespace)
    return isolated_apiserver


def _dry_run(server: APIServer, docs: list[dict], *flags: str) -> list[str]:
    out = server.kubectl("apply", "--server-side", "--dry-run=server", "--field-manager=helm-chart-test",
                         *flags, "-f", "-", input=yaml.safe_dump_all(docs))
    return [line for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize(("namespace", "values"), MODES)
def test_each_rendering_passes_a_server_side_dry_run(server: APIServer, namespace: str,
                                                     values: Path | None) -> None:
    rendered = template_text(namespace=namespace, files=(values,) if values else ()).stdout
    given = yaml.safe_load(values.read_text()) if values else {}
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    no_crds = ("cert-manager.io/", "monitoring.coreos.com/")
    cert_manager = [d for d in docs if d["apiVersion"].startswith(no_crds)]
    applied = [d for d in docs if d not in cert_manager]
    assert applied
    lines = _dry_run(server, applied)
    assert len(lines) == len(applied), lines
    assert all(line.endswith("serverside-applied (server dry run)") for line in lines), lines
    for doc in applied:
        assert any(line.split()[0].endswith(f"/{doc['metadata']['name']}") for line in lines), doc["metadata"]
    if given.get("certificates", {}).get("source") == "cert-manager":
        assert sorted(d["kind"] for d in cert_manager) == ["Certificate", "Certificate", "Issuer", "Issuer"]
    if given.get("monitoring", {}).get("enabled"):
        assert sorted(d["kind"] for d in cert_manager) == ["PrometheusRule", "ServiceMonitor"]
    if given.get("podDisruptionBudget", {}).get("enabled"):
        budgets = [d for d in applied if d["kind"] == "PodDisruptionBudget"]
        assert len(budgets) == len([d for d in applied if d["kind"] == "Deployment"]) > 0
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
                     f"--set=image.repository={IMAGE}", "--dry-run=server",
                     f"--kubeconfig={server.kubeconfig}").stdout
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


def _install(server: APIServer, release: str, namespace: str, *args: str, check: bool = True) -> str:
    done = helm("install", release, str(CHART), "--namespace", namespace, "--create-namespace",
                f"--set=image.repository={IMAGE}", f"--kubeconfig={server.kubeconfig}", *args, check=check)
    return done.stdout if check else done.stderr


def _uninstall(server: APIServer, release: str, namespace: str) -> None:
    helm("uninstall", release, "--namespace", namespace, f"--kubeconfig={server.kubeconfig}")


def test_two_releases_install_side_by_side(server: APIServer) -> None:
    """``helm install`` (ct install's step) of two standalone releases in two namespaces: both are
    deployed, each owns its namespaced objects under the manifests' names and its own cluster-scoped
    ones; uninstalling one leaves the other whole."""
    releases = {"team-a": "team-a-fleetsched", "team-b": "team-b-fleetsched"}
    try:
        for release in releases:
            _install(server, release, release, "--set=estimators.members[0].name=member1",
                     "--set=podDisruptionBudget.enabled=true", "--set=featureGates.WorkloadAffinity=true")
        listed = yaml.safe_load(helm("list", "--all-namespaces", "--output=yaml",
                                     f"--kubeconfig={server.kubeconfig}").stdout)
        assert sorted((r["name"], r["namespace"], r["status"]) for r in listed) == [
            ("team-a", "team-a", "deployed"), ("team-b", "team-b", "deployed")]
        for release, full in releases.items():
            names = server.kubectl("get", "deployments,services,poddisruptionbudgets,serviceaccounts,roles",
                                   "-n", release, "-o", "name").split()
            for name in ("deployment.apps/fleetsched-scheduler", "deployment.apps/fleetsched-controller",
                         "deployment.apps/fleetsched-webhook",
                         "deployment.apps/karmada-scheduler-estimator-member1",
                         "poddisruptionbudget.policy/fleetsched-scheduler",
                         "serviceaccount/fleetsched-controller", "service/fleetsched-webhook"):
                assert name in names, (release, name)
            for kind in ("clusterrole", "clusterrolebinding"):
                got = server.kubectl("get", kind, f"{full}-scheduler", "-o", "yaml")
                assert f"meta.helm.sh/release-namespace: {release}" in got
            hook = yaml.safe_load(server.kubectl("get", "validatingwebhookconfiguration",
                                                 f"{full}-validating-config", "-o", "yaml"))
            assert {w["clientConfig"]["service"]["namespace"] for w in hook["webhooks"]} == {release}
            binding = yaml.safe_load(server.kubectl("get", "clusterrolebinding", f"{full}-controller",
                                                    "-o", "yaml"))
            assert binding["roleRef"]["name"] == f"{full}-controller"
            assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "fleetsched-controller",
                                            "namespace": release}]
        _uninstall(server, "team-a", "team-a")
        assert server.kubectl("get", "clusterrole", "-o", "name").count("team-a-fleetsched") == 0
        assert "deployment.apps/fleetsched-scheduler" in server.kubectl(
            "get", "deployments", "-n", "team-b", "-o", "name").split()
    finally:
        listed = yaml.safe_load(helm("list", "--all-namespaces", "--output=yaml",
                                     f"--kubeconfig={server.kubeconfig}").stdout) or []
        for entry in listed:
            _uninstall(server, entry["name"], entry["namespace"])


def _dev_up_module() -> object:
    import importlib.util

    spec = importlib.util.spec_from_file_location("dev_up_for_chart_test", ROOT / "hack" / "dev_up.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_webhook_registrations_left_behind(server: APIServer, tmp_path: Path) -> None:
    """Issue 29: the standalone chart on dev-up failed its server-side dry run with ``exactly one
    of url or service is required``, dev-up having registered the same configuration names by URL.
    dev-up's registrations now have names of their own; one by URL under the chart's names (as
    before) stops ``helm install`` with a message saying why, before the API server's."""
    ca_file = make_certificates(tmp_path / "certs")
    dev_up = _dev_up_module()
    registrations = dev_up.webhook_configurations(8443, ca_file)  # type: ignore[attr-defined]
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(registrations)]
    assert names == ["fleetsched-dev-up-mutating-config", "fleetsched-dev-up-validating-config"]
    server.kubectl("apply", "-f", "-", input=registrations)
    try:
        out = helm("install", "fleetsched", str(CHART), "--namespace", "fleetsched-system",
                   f"--set=image.repository={IMAGE}", "--dry-run=server",
                   f"--kubeconfig={server.kubeconfig}").stdout
        assert "STATUS: pending-install" in out
        rendered = [d for d in yaml.safe_load_all(template_text().stdout) if d]
        hooks = [d for d in rendered if d["kind"].endswith("WebhookConfiguration")]
        assert len(_dry_run(server, hooks)) == 2
        # as dev-up registered them before: by URL under the manifests' (and the chart's) names
        server.kubectl("delete", "-f", "-", input=registrations)
        as_before = registrations.replace("fleetsched-dev-up-", "fleetsched-")
        server.kubectl("apply", "-f", "-", input=as_before)
        with pytest.raises(RuntimeError, match="exactly one of url or service is required"):
            _dry_run(server, hooks, "--force-conflicts")
        refused = helm("install", "fleetsched", str(CHART), "--namespace", "fleetsched-system",
                       f"--set=image.repository={IMAGE}", "--dry-run=server",
                       f"--kubeconfig={server.kubeconfig}", check=False)
        assert refused.returncode != 0
        assert ("MutatingWebhookConfiguration fleetsched-mutating-config: made not by Helm" in refused.stderr
                and "exactly one of url or service is required" in refused.stderr
                and "fullnameOverride" in refused.stderr), refused.stderr
        # another release name is another set of names: it installs beside them
        out = helm("install", "team-c", str(CHART), "--namespace", "fleetsched-system",
                   f"--set=image.repository={IMAGE}", "--dry-run=server",
                   f"--kubeconfig={server.kubeconfig}").stdout
        assert "STATUS: pending-install" in out
    finally:
        server.kubectl("delete", "mutatingwebhookconfigurations,validatingwebhookconfigurations", "--all")
