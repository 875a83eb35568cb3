"""Least privilege of the install, asked of a real kube-apiserver as each of its ServiceAccounts.

``kubectl apply -k`` of the prepared install (as tests/e2e/test_install.py prepares it), then, for
every ServiceAccount a pod of the install runs as (``default`` for the pods that name none), with
a token the apiserver issued to it:

- the apiserver's rules review (SelfSubjectRulesReview, what ``kubectl auth can-i --list`` shows)
  in the install's namespace, in ``default`` and in ``kube-system`` holds no rule on Secrets, on
  any RBAC kind, no ``escalate``, ``bind`` or ``impersonate``, no token or certificate minting and
  no wildcard;
- ``kubectl auth can-i`` says no to reading Secrets and writing roles and bindings;
- patching its own ClusterRole to ``*`` on ``*``, binding ``cluster-admin`` to itself and adding
  itself to another binding are all Forbidden, and afterwards it still cannot do ``*`` on ``*``;
- the controller, which may patch templates, gets through exactly the patches ``claim_patch`` and
  ``release_patch`` write; a pod template, a replica count, another label or annotation, a
  finalizer, an owner reference or a ConfigMap's data it may not change (the install's
  ValidatingAdmissionPolicy ``fleetsched-controller-claims-only``).

Then the opt-in: without ``escalate`` the controller cannot even label a ClusterRole that grants
more than it holds (why claiming RBAC templates needs the verb); with
manifests/overlays/propagate-rbac it can, and RBAC would let it rewrite its own ClusterRole too,
which the admission policy refuses (and, without that policy, does not).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.api.policy import PropagationPolicy
from fleetsched.controller.policy.decisions import claim_patch, release_patch
from tests.e2e.test_install import prepared_tree, render, service_account_kubeconfig
from tests.support.controlplane import APIServer, ControlPlane, wait_until

NAMESPACE = "fleetsched-system"
RBAC_GROUP = "rbac.authorization.k8s.io"
PP_LABEL = "propagationpolicy.karmada.io/permanent-id"
RBAC_PLURALS = ("roles", "rolebindings", "clusterroles", "clusterrolebindings")
# Minting credentials or acting as someone else: none of the install needs any of these.
CREDENTIAL_RESOURCES = {
    ("", "serviceaccounts/token"),
    ("certificates.k8s.io", "certificatesigningrequests"),
    ("certificates.k8s.io", "certificatesigningrequests/approval"),
    ("certificates.k8s.io", "signers"),
    ("authentication.k8s.io", "tokenreviews"),
}
FORBIDDEN_VERBS = {"escalate", "bind", "impersonate", "approve", "sign", "*"}
CLAIMS_ONLY = "fleetsched-controller-claims-only"
WIDEN = {"op": "add", "path": "/rules/-", "value": {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}}


@dataclass
class Account:
    name: str
    kubeconfig: Path
    cluster_roles: list[str]
    roles: list[str]
    cluster_role_bindings: list[str]

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{NAMESPACE}:{self.name}"


@dataclass
class Install:
    server: APIServer
    tree: Path
    accounts: list[Account]

    def as_(self, account: Account, *args: str, input: str | None = None) -> tuple[bool, str]:
        """kubectl ARGS authenticated as ``account``'s token: (succeeded, stdout or the error)."""
        try:
            return True, self.server.kubectl(f"--kubeconfig={account.kubeconfig}", *args, input=input)
        except RuntimeError as exc:
            return False, str(exc)

    def can_i(self, account: Account, *args: str) -> bool:
        ok, out = self.as_(account, "auth", "can-i", *args)
        return ok and out.strip() == "yes"


def accounts_of(docs: list[dict[str, Any]]) -> dict[str, dict[str, list[str]]]:
    """ServiceAccount name -> the ClusterRoles, Roles and ClusterRoleBindings bound to it."""
    names = {d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount"}
    for doc in docs:
        if doc["kind"] == "Deployment":
            names.add(doc["spec"]["template"]["spec"].get("serviceAccountName") or "default")
    found: dict[str, dict[str, list[str]]] = {
        n: {"cluster_roles": [], "roles": [], "cluster_role_bindings": []} for n in names
    }
    for binding in docs:
        if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        for subject in binding["subjects"]:
            if subject.get("kind") == "ServiceAccount" and subject.get("namespace") == NAMESPACE:
                entry = found.setdefault(subject["name"], {"cluster_roles": [], "roles": [],
                                                           "cluster_role_bindings": []})
                kind = "cluster_roles" if binding["roleRef"]["kind"] == "ClusterRole" else "roles"
                entry[kind].append(binding["roleRef"]["name"])
                if binding["kind"] == "ClusterRoleBinding":
                    entry["cluster_role_bindings"].append(binding["metadata"]["name"])
    return found


@pytest.fixture(scope="module")
def install(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Install]:
    workdir = tmp_path_factory.mktemp("rbac")
    server = control_plane.add_apiserver("rbac", apply_crds=False)
    try:
        tree = prepared_tree(workdir)
        server.kubectl("apply", "-k", str(tree))
        docs = render(tree, server)
        # kube-controller-manager would create each namespace's `default` ServiceAccount; none runs here.
        server.kubectl("create", "serviceaccount", "default", "-n", NAMESPACE, check=False)
        accounts = [
            Account(name=name, **bound,
                    kubeconfig=service_account_kubeconfig(server, name, workdir / f"{name}.kubeconfig"))
            for name, bound in sorted(accounts_of(docs).items())
        ]
        yield Install(server=server, tree=tree, accounts=accounts)
    finally:
        control_plane.remove_apiserver("rbac")


def test_the_install_runs_as_the_accounts_this_test_checks(install: Install) -> None:
    names = {a.name for a in install.accounts}
    assert {"fleetsched-scheduler", "fleetsched-controller", "default"} <= names
    controller = next(a for a in install.accounts if a.name == "fleetsched-controller")
    assert controller.cluster_roles == ["fleetsched-controller"]
    for account in install.accounts:  # each token is the account's own
        ok, out = install.as_(account, "auth", "whoami", "-o", "json")
        assert ok, out
        assert json.loads(out)["status"]["userInfo"]["username"] == account.user


def rules_review(install: Install, account: Account, namespace: str) -> list[dict[str, Any]]:
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
              "spec": {"namespace": namespace}}
    ok, out = install.as_(account, "create", "--validate=false", "-f", "-", "-o", "json",
                          input=json.dumps(review))
    assert ok, out
    status = json.loads(out)["status"]
    assert not status.get("incomplete"), status
    return list(status.get("resourceRules") or [])


@pytest.mark.parametrize("namespace", [NAMESPACE, "default", "kube-system"])
def test_no_account_holds_a_rule_on_secrets_rbac_or_credentials(install: Install, namespace: str) -> None:
    for account in install.accounts:
        for rule in rules_review(install, account, namespace):
            groups, resources, verbs = (set(rule.get(k) or ()) for k in ("apiGroups", "resources", "verbs"))
            where = f"{account.user} in {namespace}: {rule}"
            assert "*" not in groups and "*" not in resources, where
            assert not verbs & FORBIDDEN_VERBS, where
            if "" in groups:
                assert "secrets" not in resources, where
            assert RBAC_GROUP not in groups, where
            assert not {(g, r) for g in groups for r in resources} & CREDENTIAL_RESOURCES, where


def test_can_i_says_no_to_secrets_and_rbac_writes(install: Install) -> None:
    for account in install.accounts:
        for verb in ("get", "list", "watch"):
            assert not install.can_i(account, verb, "secrets", "-A"), (account.name, verb)
            assert not install.can_i(account, verb, "secrets", "-n", NAMESPACE), (account.name, verb)
        for plural in RBAC_PLURALS:
            for verb in ("create", "update", "patch", "delete", "escalate", "bind"):
                assert not install.can_i(account, verb, f"{plural}.{RBAC_GROUP}", "-A"), (account.name, verb,
                                                                                            plural)
        for verb, resource in (("impersonate", "serviceaccounts"), ("impersonate", "users"),
                               ("create", "serviceaccounts/token"), ("create", "pods")):
            assert not install.can_i(account, verb, resource, "-A"), (account.name, verb, resource)
        assert not install.can_i(account, "*", "*"), account.name


def wait_for_result(attempt: Callable[[], tuple[bool, str]], *, ok: bool) -> tuple[bool, str]:
    """Admission policies take effect a moment after they are written: retry until ``ok``."""
    results: list[tuple[bool, str]] = []
    wait_until(lambda: results.append(attempt()) or results[-1][0] is ok, timeout=30, interval=0.5,
               message=lambda: f"never {'allowed' if ok else 'refused'}: {results[-1:]}")
    return results[-1]


def forbidden(ok: bool, out: str, resource: str = "clusterroles") -> bool:
    """Refused by the apiserver's authoriser, for ``resource`` (not for some client-side lookup)."""
    text = out.lower()
    return not ok and "forbidden" in text and f'"{resource}"' in text


def test_no_account_can_widen_its_own_rights(install: Install) -> None:
    for account in install.accounts:
        own = account.cluster_roles or ["fleetsched-controller"]  # the default account tries another's
        for role in own:
            result = install.as_(account, "patch", "clusterrole", role, "--type=json",
                                 "-p", json.dumps([WIDEN]))
            assert forbidden(*result), (account.name, role, result)
        for role in account.roles:
            result = install.as_(account, "patch", "role", role, "-n", NAMESPACE, "--type=json",
                                 "-p", json.dumps([WIDEN]))
            assert forbidden(*result, "roles"), (account.name, role, result)
        grab = {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": f"grab-{account.name}"},
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": account.name, "namespace": NAMESPACE}]}
        result = install.as_(account, "create", "--validate=false", "-f", "-", input=json.dumps(grab))
        assert forbidden(*result, "clusterrolebindings"), (account.name, result)
        for binding in account.cluster_role_bindings or ["fleetsched-scheduler"]:
            join = [{"op": "add", "path": "/subjects/-",
                     "value": {"kind": "Group", "name": "system:authenticated", "apiGroup": RBAC_GROUP}}]
            result = install.as_(account, "patch", "clusterrolebinding", binding, "--type=json",
                                 "-p", json.dumps(join))
            assert forbidden(*result, "clusterrolebindings"), (account.name, binding, result)
        assert not install.can_i(account, "*", "*"), account.name
    # nothing changed: the roles are as installed
    role = json.loads(install.server.kubectl("get", "clusterrole", "fleetsched-controller", "-o", "json"))
    assert all("*" not in rule["verbs"] for rule in role["rules"])
    assert install.server.kubectl("get", "clusterrolebinding", "-o", "name").count("grab-") == 0


BROAD_ROLE = f"""
apiVersion: {RBAC_GROUP}/v1
kind: ClusterRole
metadata: {{name: "fleet:broad"}}
rules: [{{apiGroups: [""], resources: [secrets, nodes], verbs: [get, list, delete]}}]
"""


def test_claiming_a_role_takes_escalate_which_the_rbac_overlay_grants(install: Install) -> None:
    """Why propagate-rbac holds ``escalate``: even a label patch on a broader role is refused without it."""
    controller = next(a for a in install.accounts if a.name == "fleetsched-controller")
    install.server.apply(BROAD_ROLE)
    overlay = install.tree / "overlays" / "propagate-rbac" / "rbac.yaml"
    label = json.dumps({"metadata": {"labels": {"clusterpropagationpolicy.karmada.io/permanent-id": "x"}}})
    try:
        # without the overlay: no rights on ClusterRoles at all
        assert forbidden(*install.as_(controller, "patch", "clusterrole", "fleet:broad", "--type=merge",
                                      "-p", label))
        # get and patch, as the overlay grants, but no escalate: the escalation check refuses a label
        install.server.apply(yaml.safe_dump({
            "apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole", "metadata": {"name": "patch-only"},
            "rules": [{"apiGroups": [RBAC_GROUP], "resources": ["clusterroles"],
                       "verbs": ["get", "patch"]}]}))
        install.server.kubectl("create", "clusterrolebinding", "patch-only", "--clusterrole=patch-only",
                               f"--serviceaccount={NAMESPACE}:{controller.name}")
        ok, out = install.as_(controller, "patch", "clusterrole", "fleet:broad", "--type=merge", "-p", label)
        assert not ok and "attempting to grant rbac permissions not currently held" in out.lower(), out
        install.server.kubectl("delete", "clusterrolebinding,clusterrole", "patch-only")
        # the opt-in overlay's rights: the claim goes through ...
        install.server.kubectl("apply", "-f", str(overlay))
        ok, out = install.as_(controller, "patch", "clusterrole", "fleet:broad", "--type=merge", "-p", label)
        assert ok, out
        # ... and a rewrite of its own role, which RBAC would allow now, is what the install's
        # ValidatingAdmissionPolicy refuses
        widen = ("patch", "clusterrole", "fleetsched-controller", "--type=json", "-p", json.dumps([WIDEN]),
                 "--dry-run=server")
        ok, out = install.as_(controller, *widen)
        assert not ok and CLAIMS_ONLY in out, out
        # without that policy (a cluster older than 1.30, or the policy deleted) it would go through,
        # as the README warns
        install.server.kubectl("delete", "validatingadmissionpolicybinding", CLAIMS_ONLY)
        try:
            ok, out = wait_for_result(lambda: install.as_(controller, *widen), ok=True)
            assert ok, out
        finally:
            install.server.kubectl("apply", "-f", str(install.tree / "controller" / "claims-only.yaml"))
        wait_for_result(lambda: install.as_(controller, *widen), ok=False)
    finally:
        install.server.kubectl("delete", "-f", str(overlay), "--ignore-not-found")
        install.server.kubectl("delete", "clusterrolebinding,clusterrole", "patch-only", "--ignore-not-found")
        install.server.kubectl("delete", "clusterrole", "fleet:broad", "--ignore-not-found")
    assert not install.can_i(controller, "patch", f"clusterroles.{RBAC_GROUP}")


def test_the_controller_may_change_only_karmadas_claims_on_templates(install: Install) -> None:
    """With ``patch`` on Deployments RBAC would let the controller run a pod as any ServiceAccount;
    the install's ValidatingAdmissionPolicy lets through exactly what claim_patch and release_patch
    write, and refuses anything else the controller tries, while other users are unaffected."""
    controller = next(a for a in install.accounts if a.name == "fleetsched-controller")
    namespace = "tenant"
    install.server.kubectl("create", "namespace", namespace)
    install.server.kubectl("create", "deployment", "web", "--image=nginx", "-n", namespace)
    install.server.kubectl("create", "configmap", "conf", "--from-literal=a=b", "-n", namespace)
    policy = PropagationPolicy.model_validate({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "web", "namespace": namespace,
                     "labels": {PP_LABEL: "11111111-2222-4333-8444-5"}},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]}})

    def template() -> dict[str, Any]:
        out = install.server.kubectl("get", "deployment", "web", "-n", namespace, "-o", "json")
        return dict(json.loads(out))

    def patch(kind: str, name: str, body: dict[str, Any]) -> tuple[bool, str]:
        return install.as_(controller, "patch", kind, name, "-n", namespace, "--type=merge",
                           "-p", json.dumps(body))

    # in force (admission policies apply a moment after they are written)
    wait_for_result(lambda: patch("deployment", "web", {"metadata": {"annotations": {"a": "b"}}}), ok=False)
    claim = claim_patch(template(), policy)
    assert claim is not None
    ok, out = patch("deployment", "web", claim)
    assert ok, out
    assert template()["metadata"]["labels"][PP_LABEL] == "11111111-2222-4333-8444-5"
    for attempt in (
        {"spec": {"template": {"spec": {"serviceAccountName": "admin"}}}},
        {"spec": {"replicas": 50}},
        {"metadata": {"labels": {"app": "hijacked"}}},
        {"metadata": {"annotations": {"note": "mine"}}},
        {"metadata": {"finalizers": ["example.com/hold"]}},
        {"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "conf",
                                           "uid": "00000000-0000-4000-8000-000000000001"}]}},
    ):
        ok, out = patch("deployment", "web", attempt)
        assert not ok and CLAIMS_ONLY in out, (attempt, out)
    ok, out = patch("configmap", "conf", {"data": {"a": "changed"}})
    assert not ok and CLAIMS_ONLY in out, out
    release = release_patch(template(), PropagationPolicy.KIND)
    assert release is not None
    ok, out = patch("deployment", "web", release)
    assert ok, out
    assert PP_LABEL not in (template()["metadata"].get("labels") or {})
    # anyone else is not held to it
    install.server.kubectl("scale", "deployment", "web", "-n", namespace, "--replicas=3")
    assert template()["spec"]["replicas"] == 3
