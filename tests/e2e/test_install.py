"""``kubectl apply -k manifests/`` against a real kube-apiserver, as README's install section says.

The tree is prepared the way a user prepares it (hack/gen-certs.sh into manifests/certs,
hack/gen-estimators.sh for two members) in a copy, then:

- ``--dry-run=server`` passes every object through the apiserver's validation and admission;
- a real apply gives Established CRDs with Karmada's short names, the workloads, webhook
  configurations carrying the generated CA, and RBAC that the apiserver's own authoriser
  (``kubectl auth can-i``) evaluates as intended for each ServiceAccount;
- the beside-Karmada overlay passes a server dry run too.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.controlplane import APIServer

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
NAMESPACE = "fleetsched-system"
MEMBERS = ("member1", "member2")


def prepared_tree(destination: Path, members: tuple[str, ...] = MEMBERS) -> Path:
    """A copy of manifests/ with a generated certificate and estimators, ready for ``apply -k``."""
    tree = destination / "manifests"
    shutil.copytree(MANIFESTS, tree, ignore=shutil.ignore_patterns("*.crt", "*.key"))
    subprocess.run([str(ROOT / "hack" / "gen-certs.sh"), str(tree / "certs")], check=True,
                   capture_output=True)
    subprocess.run([str(ROOT / "hack" / "gen-estimators.sh"), *members], check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "ESTIMATORS_DIR": str(tree / "estimators")})
    return tree


@pytest.fixture(scope="module")
def fresh_apiserver(control_plane: object) -> Iterator[APIServer]:
    """A kube-apiserver with nothing of fleetsched's in it (no CRDs): the install brings them."""
    from tests.support.controlplane import ControlPlane

    assert isinstance(control_plane, ControlPlane)
    server = control_plane.add_apiserver("install", apply_crds=False)
    try:
        yield server
    finally:
        control_plane.remove_apiserver("install")


def can_i(server: APIServer, account: str, verb: str, resource: str, *extra: str) -> bool:
    out = server.kubectl("auth", "can-i", verb, resource, f"--as=system:serviceaccount:{NAMESPACE}:{account}",
                         *extra, check=False)
    return out.strip() == "yes"


def test_server_dry_run_of_the_install_succeeds(fresh_apiserver: APIServer, tmp_path: Path) -> None:
    tree = prepared_tree(tmp_path)
    # A dry run creates nothing, and the apiserver refuses namespaced objects in a namespace it does
    # not have (NamespaceLifecycle admission), dry run or not. So, as README says, a server dry run
    # on an empty control plane needs the namespace first; a real apply creates it itself.
    fresh_apiserver.kubectl("create", "namespace", NAMESPACE)
    out = fresh_apiserver.kubectl("apply", "-k", str(tree), "--dry-run=server")
    assert "created (server dry run)" in out
    for expected in (
        "customresourcedefinition.apiextensions.k8s.io/resourcebindings.work.karmada.io created",
        "customresourcedefinition.apiextensions.k8s.io/clusters.cluster.karmada.io created",
        "deployment.apps/fleetsched-scheduler created",
        "deployment.apps/fleetsched-controller created",
        "deployment.apps/fleetsched-webhook created",
        "deployment.apps/karmada-scheduler-estimator-member1 created",
        "service/karmada-scheduler-estimator-member2 created",
        "mutatingwebhookconfiguration.admissionregistration.k8s.io/fleetsched-mutating-config created",
        "validatingwebhookconfiguration.admissionregistration.k8s.io/fleetsched-validating-config created",
        "clusterrole.rbac.authorization.k8s.io/fleetsched-scheduler created",
    ):
        assert f"{expected} (server dry run)" in out, out
    # a dry run leaves nothing behind
    assert fresh_apiserver.kubectl("get", "crd", "-o", "name").strip() == ""
    assert fresh_apiserver.kubectl("get", "deployments,serviceaccounts", "-n", NAMESPACE, "-o", "name",
                                   "--ignore-not-found").strip() == ""


def test_the_install_applies_and_grants_each_component_what_it_needs(
    fresh_apiserver: APIServer, tmp_path: Path
) -> None:
    tree = prepared_tree(tmp_path)
    fresh_apiserver.kubectl("apply", "-k", str(tree))
    fresh_apiserver.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    # Karmada's short names answer
    for short in ("rb", "crb", "pp", "cpp", "cluster"):
        fresh_apiserver.kubectl("get", short, "-A")
    deployments = json.loads(fresh_apiserver.kubectl("get", "deployments", "-n", NAMESPACE, "-o", "json"))
    replicas = {d["metadata"]["name"]: d["spec"]["replicas"] for d in deployments["items"]}
    assert replicas["fleetsched-scheduler"] == 2
    assert {"fleetsched-controller", "fleetsched-webhook", "karmada-scheduler-estimator-member1",
            "karmada-scheduler-estimator-member2"} <= set(replicas)

    ca = base64.b64encode((tree / "certs" / "ca.crt").read_bytes()).decode()
    for kind, name in (("mutatingwebhookconfiguration", "fleetsched-mutating-config"),
                       ("validatingwebhookconfiguration", "fleetsched-validating-config")):
        config = json.loads(fresh_apiserver.kubectl("get", kind, name, "-o", "json"))
        assert {h["clientConfig"]["caBundle"] for h in config["webhooks"]} == {ca}

    # the apiserver's own RBAC authoriser, asked as each ServiceAccount
    scheduler: Callable[..., bool] = lambda *a: can_i(fresh_apiserver, "fleetsched-scheduler", *a)  # noqa: E731
    assert scheduler("watch", "clusters.cluster.karmada.io")
    assert scheduler("patch", "resourcebindings.work.karmada.io", "--subresource=status", "-n", "shop")
    assert scheduler("patch", "clusterresourcebindings.work.karmada.io")
    assert scheduler("create", "events", "-n", "shop")
    assert scheduler("update", "leases.coordination.k8s.io/fleetsched-scheduler", "-n", NAMESPACE)
    assert not scheduler("update", "leases.coordination.k8s.io/fleetsched-controller", "-n", NAMESPACE)
    assert not scheduler("create", "resourcebindings.work.karmada.io", "-n", "shop")
    assert not scheduler("patch", "clusters.cluster.karmada.io")
    assert not scheduler("get", "secrets", "-n", NAMESPACE)

    controller: Callable[..., bool] = lambda *a: can_i(fresh_apiserver, "fleetsched-controller", *a)  # noqa: E731
    assert controller("create", "resourcebindings.work.karmada.io", "-n", "shop")
    assert controller("delete", "clusterresourcebindings.work.karmada.io")
    assert controller("patch", "deployments.apps", "-n", "shop")
    assert controller("watch", "propagationpolicies.policy.karmada.io", "-A")
    assert not controller("update", "deployments.apps", "-n", "shop")
    assert not controller("patch", "resourcebindings.work.karmada.io", "--subresource=status", "-n", "shop")
    assert not controller("list", "clusters.cluster.karmada.io")

    webhook: Callable[..., bool] = lambda *a: can_i(fresh_apiserver, "default", *a)  # noqa: E731
    assert not webhook("get", "propagationpolicies.policy.karmada.io", "-A")


def test_server_dry_run_of_the_beside_karmada_overlay_succeeds(fresh_apiserver: APIServer) -> None:
    fresh_apiserver.kubectl("create", "namespace", "karmada-system", check=False)
    out = fresh_apiserver.kubectl("apply", "-k", str(MANIFESTS / "overlays" / "beside-karmada"),
                                  "--dry-run=server")
    lines = sorted(line for line in out.splitlines() if line.strip())
    assert lines == [
        "deployment.apps/fleetsched-scheduler created (server dry run)",
        "service/fleetsched-scheduler-metrics created (server dry run)",
        "serviceaccount/fleetsched-scheduler created (server dry run)",
    ], out
