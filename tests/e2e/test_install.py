"""``kubectl apply -k manifests/`` against a real kube-apiserver, as README's install section says.

The tree is prepared the way a user prepares it (hack/gen-certs.sh into manifests/certs,
hack/gen-estimators.sh for two members) in a copy, then:

- ``--dry-run=server`` passes every object through the apiserver's validation and admission;
- a real apply gives Established CRDs with Karmada's short names, the workloads, webhook
  configurations carrying the generated CA, and RBAC that the apiserver's own authoriser
  (``kubectl auth can-i``) evaluates as intended for each ServiceAccount;
- the beside-Karmada overlay passes a server dry run too;
- an estimator started with its rendered arguments reads a member cluster as the identity that
  manifests/member/ creates there, and becomes ready (its caches synced under that RBAC).
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.controlplane import APIServer, ControlPlane, free_port, wait_until
from tests.support.karmada import load_documents
from tests.support.processes import SchedulerProcess
from tests.unit.install_tree import prepared_tree as prepare

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
NAMESPACE = "fleetsched-system"
MEMBERS = ("member1", "member2")


def prepared_tree(destination: Path, members: tuple[str, ...] = MEMBERS) -> Path:
    """``tests/unit/install_tree.py``'s ``prepared_tree`` for this file's members."""
    return prepare(destination, members)


def render(tree: Path, server: APIServer) -> list[dict[str, Any]]:
    return load_documents(server.kubectl("kustomize", str(tree)))


def container_args(docs: list[dict[str, Any]], deployment: str) -> list[str]:
    for doc in docs:
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] == deployment:
            return list(doc["spec"]["template"]["spec"]["containers"][0]["args"])
    raise AssertionError(f"Deployment {deployment} is not in the install")


def override(args: list[str], **flags: str) -> list[str]:
    """The manifest's args with some ``--flag=value`` replaced (or added): keys use underscores."""
    wanted = {f"--{k.replace('_', '-')}": v for k, v in flags.items()}
    out = [a for a in args if a.partition("=")[0] not in wanted]
    return out + [f"{flag}={value}" for flag, value in wanted.items()]


def service_account_kubeconfig(server: APIServer, account: str, path: Path) -> Path:
    """A kubeconfig that authenticates as ``fleetsched-system/<account>`` with a bound token."""
    token = server.kubectl("create", "token", account, "-n", NAMESPACE, "--duration=2h").strip()
    admin = yaml.safe_load(server.kubeconfig.read_text())
    cluster = admin["clusters"][0]
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": account, "context": {"cluster": cluster["name"], "user": account}}],
        "current-context": account,
    }))
    path.chmod(0o600)
    return path


@dataclass
class Component(SchedulerProcess):
    """``python -m fleetsched ARGS`` with /readyz and /metrics on ``port`` (the harness's convention)."""

    args: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "fleetsched", *self.args]


@pytest.fixture(scope="module")
def fresh_apiserver(control_plane: ControlPlane) -> Iterator[APIServer]:
    """A kube-apiserver with nothing of fleetsched's in it (no CRDs): the install brings them."""
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
        "deployment.apps/fleetsched-descheduler created (server dry run)",
        "deployment.apps/fleetsched-scheduler created (server dry run)",
        "service/fleetsched-descheduler-metrics created (server dry run)",
        "service/fleetsched-scheduler-metrics created (server dry run)",
        "serviceaccount/fleetsched-descheduler created (server dry run)",
        "serviceaccount/fleetsched-scheduler created (server dry run)",
    ], out


def test_an_estimator_syncs_its_member_with_the_member_rbac(
    control_plane: ControlPlane, fresh_apiserver: APIServer, tmp_path: Path
) -> None:
    member = control_plane.add_apiserver("install-member")
    try:
        member.kubectl("apply", "-k", str(MANIFESTS / "member"))
        member.apply(MEMBER_NODE)
        kubeconfig = service_account_kubeconfig(member, "fleetsched-estimator",
                                                tmp_path / "member.kubeconfig")
        assert member.kubectl("auth", "can-i", "list", "nodes", f"--kubeconfig={kubeconfig}",
                              check=False).strip() == "yes"
        assert member.kubectl("auth", "can-i", "get", "secrets", "-A", f"--kubeconfig={kubeconfig}",
                              check=False).strip() == "no"
        tree = prepared_tree(tmp_path, members=("member1",))
        docs = render(tree, fresh_apiserver)
        port = free_port()
        tls = tree / "estimators" / "tls"  # what the Secret karmada-scheduler-estimator-member1-tls holds
        estimator = Component(
            kubeconfig=kubeconfig, log_path=tmp_path / "estimator.log", port=port,
            args=tuple(override(container_args(docs, "karmada-scheduler-estimator-member1"),
                                kubeconfig=str(kubeconfig), server_bind_address="127.0.0.1",
                                server_port=str(free_port()), metrics_bind_address=f"127.0.0.1:{port}",
                                health_probe_bind_address=f"127.0.0.1:{port}",
                                grpc_auth_cert_file=str(tls / "member1" / "tls.crt"),
                                grpc_auth_key_file=str(tls / "member1" / "tls.key"),
                                grpc_client_ca_file=str(tls / "ca.crt"))),
        )
        try:
            estimator.start(timeout=60)  # /readyz is 503 until nodes and pods have been listed
            # the gauges follow the cache within half a second: the member's one Node is in it
            wait_until(lambda: estimator.metric("fleetsched_estimator_nodes") == 1, timeout=10,
                       message=lambda: f"no Node counted:\n{estimator.log_tail()}")
            assert estimator.metric("fleetsched_estimator_watch_connected") == 1
            assert "forbidden" not in estimator.log_path.read_text().lower()
        finally:
            estimator.stop()
    finally:
        control_plane.remove_apiserver("install-member")


MEMBER_NODE = """
apiVersion: v1
kind: Node
metadata: {name: node-1}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
"""
