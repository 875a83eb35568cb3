"""The Helm chart (charts/fleetsched) renders the kustomize install (manifests/), not a copy of it.

- hack/gen_chart.py --check: the chart's files/ and crds/ are manifests/ as it is;
- helm lint passes; each mode renders what its kustomize counterpart builds: standalone equals
  ``kubectl kustomize`` of the prepared tree object for object (the chart's own labels, generated
  Secrets and caBundles aside), the Karmada modes equal overlays/beside-karmada and
  overlays/instead-of-karmada;
- sharding, the opt-in kinds, estimators per member and both certificate sources change what they
  say; a bad value fails with a message naming it.

Server-side dry runs of each mode on a real kube-apiserver: tests/e2e/test_helm_chart.py.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from install_tree import prepared_tree
from test_manifests import kustomize

from tests.support.helm import CHART, ROOT, helm, template, template_text

MEMBERS = ("member1", "member2")
# the manifests' image (fleetsched:latest), for the renderings compared with kustomize's
AS_MANIFESTS = ("image.repository=fleetsched", "image.tag=latest")
HELM_LABELS = ("app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "helm.sh/chart")
Obj = dict[str, Any]


def _key(obj: Obj) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def _by_key(objs: list[Obj]) -> dict[tuple[str, str, str], Obj]:
    return {_key(o): o for o in objs}


def _without_chart_labels(obj: Obj) -> Obj:
    labels = obj["metadata"].get("labels", {})
    for label in HELM_LABELS:
        labels.pop(label, None)
    return obj


def _without_ca_bundles(obj: Obj) -> Obj:
    for webhook in obj.get("webhooks", []):
        webhook["clientConfig"].pop("caBundle", None)
    return obj


def _unhashed(objs: list[Obj]) -> list[Obj]:
    """kustomize's render with its generated Secrets' hash suffixes taken off every reference."""
    text = json.dumps(objs)
    for obj in objs:
        if obj["kind"] == "Secret" and (m := re.fullmatch(r"(.+)-[a-z0-9]{10}", obj["metadata"]["name"])):
            text = text.replace(f'"{obj["metadata"]["name"]}"', f'"{m.group(1)}"')
    return list(json.loads(text))


def _deployment(objs: list[Obj], name: str) -> Obj:
    return next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == name)


def _args(objs: list[Obj], name: str) -> list[str]:
    return list(_deployment(objs, name)["spec"]["template"]["spec"]["containers"][0]["args"])


def test_the_chart_carries_manifests_as_they_are() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "hack" / "gen_chart.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (CHART / "crds").glob("*.yaml")) == sorted(
        p.name for p in (ROOT / "manifests" / "crds").glob("*.yaml") if p.name != "kustomization.yaml")


def test_helm_lint_passes() -> None:
    done = helm("lint", "--strict", str(CHART))
    assert "0 chart(s) failed" in done.stdout


@pytest.fixture(scope="module")
def standalone_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Obj], list[Obj]]:
    members = [f"estimators.members[{i}].name={m}" for i, m in enumerate(MEMBERS)]
    chart = template(*AS_MANIFESTS, *members)
    built = _unhashed(kustomize(prepared_tree(tmp_path_factory.mktemp("install"), MEMBERS)))
    return chart, built


def test_standalone_renders_the_kustomize_install(standalone_pair: tuple[list[Obj], list[Obj]]) -> None:
    chart, built = standalone_pair
    ours = {k: _without_ca_bundles(_without_chart_labels(o)) for k, o in _by_key(chart).items()
            if o["kind"] != "Secret"}
    theirs = {k: _without_ca_bundles(o) for k, o in _by_key(built).items()
              if o["kind"] not in ("Secret", "Namespace", "CustomResourceDefinition")}
    assert sorted(ours) == sorted(theirs)
    # the CRDs are the chart's crds/ (installed by helm before the templates)
    crds = [yaml.safe_load(p.read_text()) for p in sorted((CHART / "crds").glob("*.yaml"))]
    labelled = [o for o in built if o["kind"] == "CustomResourceDefinition"]
    for crd in labelled:
        crd["metadata"].get("labels", {}).pop("app.kubernetes.io/part-of", None)
        if not crd["metadata"].get("labels", True):
            del crd["metadata"]["labels"]
    assert _by_key(crds) == _by_key(labelled)
    for key, obj in theirs.items():
        assert ours[key] == obj, key


def test_standalone_secrets_are_the_kustomize_ones_plus_the_cas(
    standalone_pair: tuple[list[Obj], list[Obj]],
) -> None:
    chart, built = standalone_pair
    ours = {o["metadata"]["name"]: sorted(o["data"]) for o in chart if o["kind"] == "Secret"}
    theirs = {o["metadata"]["name"]: sorted(o["data"]) for o in built if o["kind"] == "Secret"}
    assert {n: ours[n] for n in theirs} == theirs
    assert sorted(set(ours) - set(theirs)) == ["fleetsched-estimator-ca", "fleetsched-webhook-ca"]


def _cert(b64: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(b64))


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    key = ca.public_key()
    try:
        if isinstance(key, rsa.RSAPublicKey):
            assert cert.signature_hash_algorithm is not None
            key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(),
                       cert.signature_hash_algorithm)
        else:
            assert isinstance(key, ec.EllipticCurvePublicKey) and cert.signature_hash_algorithm is not None
            key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))
    except Exception:  # any verification failure means "not signed by it"
        return False
    return True


def test_generated_certificates_chain_to_the_ca_bundle() -> None:
    objs = template("estimators.members[0].name=member1", namespace="fleet")
    secrets = {o["metadata"]["name"]: o["data"] for o in objs if o["kind"] == "Secret"}
    webhook_ca = _cert(secrets["fleetsched-webhook-ca"]["tls.crt"])
    serving = _cert(secrets["fleetsched-webhook-cert"]["tls.crt"])
    assert _signed_by(serving, webhook_ca)
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName)
    assert "fleetsched-webhook.fleet.svc" in names
    bundles = {w["clientConfig"]["caBundle"] for o in objs if o["kind"].endswith("WebhookConfiguration")
               for w in o["webhooks"]}
    assert bundles == {secrets["fleetsched-webhook-ca"]["tls.crt"]}
    estimator_ca = _cert(secrets["fleetsched-estimator-ca"]["tls.crt"])
    assert _signed_by(_cert(secrets["fleetsched-scheduler-estimator-tls"]["tls.crt"]), estimator_ca)
    member = _cert(secrets["karmada-scheduler-estimator-member1-tls"]["tls.crt"])
    assert _signed_by(member, estimator_ca) and not _signed_by(member, webhook_ca)
    assert "karmada-scheduler-estimator-member1.fleet.svc" in member.extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)


@pytest.mark.parametrize(("mode", "overlay", "name", "lease"), [
    pytest.param("besideKarmada", "beside-karmada", "fleetsched-scheduler", "fleetsched-scheduler",
                 id="beside Karmada"),
    pytest.param("insteadOfKarmada", "instead-of-karmada", "default-scheduler", "karmada-scheduler",
                 id="instead of karmada-scheduler"),
])
def test_karmada_modes_render_their_overlay(mode: str, overlay: str, name: str, lease: str) -> None:
    chart = [_without_chart_labels(o)
             for o in template(*AS_MANIFESTS, f"mode={mode}", namespace="karmada-system")]
    built = kustomize(ROOT / "manifests" / "overlays" / overlay)
    assert _by_key(chart) == _by_key(built)
    args = _args(chart, "fleetsched-scheduler")
    assert f"--scheduler-name={name}" in args and f"--leader-elect-resource-name={lease}" in args


def test_the_descheduler_value_renders_the_descheduler_component(tmp_path: Path) -> None:
    """Off standalone unless enabled, then as manifests/overlays/descheduler builds it (estimators'
    NetworkPolicies included); on in the Karmada modes unless disabled."""
    from test_manifests import with_components

    assert "fleetsched-descheduler" not in {o["metadata"]["name"] for o in template()}
    chart = _by_key([_without_chart_labels(o) for o in template(
        *AS_MANIFESTS, "descheduler.enabled=true", "estimators.members[0].name=member1",
        "descheduler.extraArgs={--unschedulable-threshold=2m}")])
    built = _by_key(_unhashed(with_components(tmp_path, "descheduler")))
    keys = [k for k in built if "descheduler" in k[2]]
    assert sorted(k[0] for k in keys) == ["ClusterRole", "ClusterRoleBinding", "Deployment", "Role",
                                          "RoleBinding", "Service", "ServiceAccount"]
    deployment = ("Deployment", "fleetsched-system", "fleetsched-descheduler")
    args = chart[deployment]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[-1] == "--unschedulable-threshold=2m"
    args.pop()
    for key in [*keys, ("NetworkPolicy", "fleetsched-system", "karmada-scheduler-estimator-member1")]:
        assert chart[key] == built[key], key
    off = template("mode=besideKarmada", "descheduler.enabled=false", namespace="karmada-system")
    assert not [o for o in off if "descheduler" in o["metadata"]["name"]]


def test_a_scheduler_name_value_wins() -> None:
    objs = template("mode=besideKarmada", "scheduler.schedulerName=team-a", namespace="karmada-system")
    assert "--scheduler-name=team-a" in _args(objs, "fleetsched-scheduler")


def test_sharding_runs_every_replica_on_its_share() -> None:
    objs = template("sharding.enabled=true", "sharding.schedulerReplicas=4")
    for name, replicas in (("fleetsched-scheduler", 4), ("fleetsched-controller", 3)):
        deployment = _deployment(objs, name)
        assert deployment["spec"]["replicas"] == replicas
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["args"][-2:] == ["--shard-mode=lease", "--shard-identity=$(POD_NAME)"]
        assert container["env"][0]["name"] == "POD_NAME"
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    roles = sorted(o["metadata"]["name"] for o in objs if o["kind"] == "Role")
    assert roles == ["fleetsched-controller", "fleetsched-controller-shard-members", "fleetsched-scheduler",
                     "fleetsched-scheduler-shard-members"]


def test_opt_in_kinds_add_their_flags_and_rights() -> None:
    plain = template()
    both = template("controller.propagateSecrets=true", "controller.propagateRBAC=true")
    before = _args(plain, "fleetsched-controller")
    added = [a for a in _args(both, "fleetsched-controller") if a not in before]
    assert added[0] == "--resources=*,secrets" and added[1].startswith("--resources=*,roles.rbac")
    roles = [len([o for o in objs if o["kind"] == "ClusterRole"]) for objs in (plain, both)]
    assert roles[1] > roles[0]


def test_cert_manager_issues_the_webhook_certificate() -> None:
    objs = template("certificates.source=cert-manager")
    kinds = sorted(o["kind"] for o in objs if o["apiVersion"].startswith("cert-manager.io/"))
    assert kinds == ["Certificate", "Certificate", "Issuer", "Issuer"]
    assert "fleetsched-webhook-cert" not in {o["metadata"]["name"] for o in objs if o["kind"] == "Secret"}
    for obj in objs:
        if obj["kind"].endswith("WebhookConfiguration"):
            assert obj["metadata"]["annotations"] == {
                "cert-manager.io/inject-ca-from": "fleetsched-system/fleetsched-webhook-cert"}


@pytest.mark.parametrize("mode", ["standalone", "besideKarmada"])
def test_monitoring_renders_the_monitoring_component(mode: str) -> None:
    namespace = "fleetsched-system" if mode == "standalone" else "karmada-system"
    objs = [_without_chart_labels(o) for o in template(f"mode={mode}", "monitoring.enabled=true",
                                                       namespace=namespace)]
    monitoring = ROOT / "manifests" / "overlays" / "monitoring"
    for name in ("servicemonitor.yaml", "prometheusrule.yaml"):
        expected = yaml.safe_load((monitoring / name).read_text().replace("fleetsched-system", namespace))
        expected["metadata"]["labels"] = {"app.kubernetes.io/part-of": "fleetsched"}
        assert _by_key(objs)[_key(expected)] == expected
    dashboard = _by_key(objs)[("ConfigMap", namespace, "fleetsched-grafana-dashboard")]
    json_text = (monitoring / "fleetsched-dashboard.json").read_text()
    assert dashboard["data"]["fleetsched-dashboard.json"] == json_text
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert not [o for o in template(f"mode={mode}", namespace=namespace) if o["kind"] == "ServiceMonitor"]


def test_image_and_extra_args_reach_every_container() -> None:
    objs = template("image.repository=registry.example/fleetsched", "image.tag=1.2.3",
                    "estimators.members[0].name=m1", "webhook.extraArgs={--v=4}")
    images = {c["image"] for o in objs if o["kind"] == "Deployment"
              for c in o["spec"]["template"]["spec"]["containers"]}
    assert images == {"registry.example/fleetsched:1.2.3"}
    assert _args(objs, "fleetsched-webhook")[-1] == "--v=4"


@pytest.mark.parametrize(("value", "message"), [
    pytest.param("mode=alone",
                 "at '/mode': value must be one of 'standalone', 'besideKarmada', 'insteadOfKarmada'",
                 id="mode (values.schema.json)"),
    pytest.param("certificates.source=vault",
                 "at '/certificates/source': value must be one of 'generate', 'cert-manager'",
                 id="certificates (values.schema.json)"),
    pytest.param("mode=insteadOfKarmada,sharding.enabled=true",
                 "sharding.enabled: not with mode insteadOfKarmada", id="sharded instead of Karmada"),
    pytest.param("estimators.members[0].name=Member_1",
                 'estimators.members[0].name: "Member_1" must be a DNS label', id="member name"),
])
def test_a_bad_value_is_named(value: str, message: str) -> None:
    done = template_text(value, check=False)
    assert done.returncode != 0
    assert message in done.stderr


def test_beside_karmada_keeps_the_writable_tmp_mount() -> None:
    """The overlay deleted the estimator-tls mount by name, but a mount's merge key is its mountPath:
    kustomize deleted /tmp instead, on a read-only root file system."""
    for objs in (kustomize(ROOT / "manifests" / "overlays" / "beside-karmada"),
                 template("mode=besideKarmada", namespace="karmada-system")):
        container = _deployment(objs, "fleetsched-scheduler")["spec"]["template"]["spec"]["containers"][0]
        mounts = {m["mountPath"] for m in container["volumeMounts"]}
        assert mounts == {"/tmp", "/etc/karmada/config"}
