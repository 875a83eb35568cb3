"""The install manifests agree with the code: they render, every argument is a flag the command
accepts, probes and ports follow those flags, RBAC grants what the code calls (and no more), the
estimators are where the scheduler's discovery looks, and the image is built the way it claims.

The rendered tree is the one a user applies: a copy of manifests/ with certificates from
hack/gen-certs.sh and estimators from hack/gen-estimators.sh, built by ``kubectl kustomize``.
The e2e tests (tests/e2e/test_install.py, test_story.py) then apply the same render to a real
kube-apiserver and run the components as their ServiceAccounts.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from install_tree import prepared_tree as prepare
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from fleetsched import cli
from fleetsched.controller.policy import operator as policy_operator
from fleetsched.controller.scheduler import store as scheduler_store
from fleetsched.detector import constants
from fleetsched.estimator import server_cmd as estimator_cmd

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
MEMBERS = ("member1", "aws-us-east-1")
NAMESPACE = "fleetsched-system"


# ---- rendering -------------------------------------------------------------------------------


def kubectl() -> Path:
    """kubectl with kustomize built in: the envtest one (KUBEBUILDER_ASSETS, else hack/envtest.sh's cache)."""
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets and (Path(assets) / "kubectl").is_file():
        return Path(assets) / "kubectl"
    done = subprocess.run([str(ROOT / "hack" / "envtest.sh")], capture_output=True, text=True, timeout=3000)
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, f"no kubectl: hack/envtest.sh failed:\n{done.stderr[-2000:]}"
    return Path(lines[-1]) / "kubectl"


def kustomize(directory: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(kubectl()), "kustomize", str(directory)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"kubectl kustomize {directory} failed:\n{done.stderr}"
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def prepared_tree(destination: Path, members: tuple[str, ...] = MEMBERS) -> Path:
    """``install_tree.prepared_tree`` for this file's members."""
    return prepare(destination, members)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return kustomize(prepared_tree(tmp_path_factory.mktemp("install")))


@pytest.fixture(scope="module")
def beside_karmada() -> list[dict[str, Any]]:
    return kustomize(MANIFESTS / "overlays" / "beside-karmada")


def find(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for doc in docs:
        if doc["kind"] == kind and doc["metadata"]["name"] == name:
            return doc
    raise AssertionError(f"{kind} {name} is not in the render: {sorted(names(docs, kind))}")


def names(docs: list[dict[str, Any]], kind: str) -> set[str]:
    return {d["metadata"]["name"] for d in docs if d["kind"] == kind}


def deployments(docs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    return (d for d in docs if d["kind"] == "Deployment")


def parse_command(container_args: list[str]) -> argparse.Namespace:
    """Parse a container's args with the real ``fleetsched`` parser, as the image's entrypoint does."""
    parser = cli.build_parser(container_args)
    try:
        return parser.parse_args(container_args)
    except SystemExit as exc:
        raise AssertionError(f"fleetsched rejects the manifest's arguments {container_args}") from exc


def port_of(address: str) -> int:
    return int(address.rpartition(":")[2])


# ---- what is in the install ------------------------------------------------------------------


def test_the_install_has_every_component_in_one_namespace(rendered: list[dict[str, Any]]) -> None:
    assert names(rendered, "Namespace") == {NAMESPACE}
    assert names(rendered, "Deployment") == {
        "fleetsched-scheduler", "fleetsched-controller", "fleetsched-webhook",
        *(f"karmada-scheduler-estimator-{m}" for m in MEMBERS),
    }
    for doc in rendered:
        if doc["kind"] not in ("Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
                               "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
                               "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
            assert doc["metadata"].get("namespace") == NAMESPACE, f"{doc['kind']} {doc['metadata']['name']}"
    scheduler = find(rendered, "Deployment", "fleetsched-scheduler")
    assert scheduler["spec"]["replicas"] == 2
    args = parse_command(scheduler["spec"]["template"]["spec"]["containers"][0]["args"])
    assert args.command == "scheduler" and args.leader_elect is True
    assert args.leader_elect_resource_namespace == NAMESPACE


def test_the_crds_are_the_generated_ones(rendered: list[dict[str, Any]]) -> None:
    on_disk = {p.name: p.read_text() for p in (ROOT / "crds").glob("*.yaml")}
    copies = {p.name: p.read_text() for p in (MANIFESTS / "crds").glob("*.yaml")
              if p.name != "kustomization.yaml"}
    assert copies == on_disk, "manifests/crds/ drifted from crds/: run hack/gen_crds.py"
    installed = {d["metadata"]["name"] for d in rendered if d["kind"] == "CustomResourceDefinition"}
    expected = {yaml.safe_load(text)["metadata"]["name"] for text in on_disk.values()}
    assert installed == expected and "clusters.cluster.karmada.io" in installed


def test_every_container_argument_is_a_flag_its_command_accepts(rendered: list[dict[str, Any]],
                                                               beside_karmada: list[dict[str, Any]]) -> None:
    commands = set()
    for deployment in [*deployments(rendered), *deployments(beside_karmada)]:
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            assert "command" not in container, "the image's ENTRYPOINT is fleetsched: pass args only"
            args = parse_command(container["args"])
            commands.add(args.command)
            if args.command == "estimator":
                assert estimator_cmd._validate(args) == []
    assert commands == {"scheduler", "controller", "webhook", "estimator", "descheduler"}


def test_probes_and_ports_follow_the_flags(rendered: list[dict[str, Any]]) -> None:
    for deployment in deployments(rendered):
        pod = deployment["spec"]["template"]["spec"]
        for container in pod["containers"]:
            args = parse_command(container["args"])
            ports = {p["name"]: p["containerPort"] for p in container["ports"]}
            assert ports["metrics"] == port_of(args.metrics_bind_address), deployment["metadata"]["name"]
            liveness = container["livenessProbe"]["httpGet"]
            assert liveness["path"] == "/healthz"
            probe_port = ports.get(liveness["port"], liveness["port"])
            assert probe_port == port_of(args.health_probe_bind_address), deployment["metadata"]["name"]


def test_every_pod_runs_unprivileged_with_limits(rendered: list[dict[str, Any]],
                                                beside_karmada: list[dict[str, Any]]) -> None:
    for deployment in [*deployments(rendered), *deployments(beside_karmada)]:
        name = deployment["metadata"]["name"]
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["runAsUser"] != 0, name
        for container in pod["containers"]:
            security = container["securityContext"]
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["capabilities"]["drop"] == ["ALL"], name
            assert container["resources"]["requests"]["cpu"] and container["resources"]["requests"]["memory"]
            assert container["resources"]["limits"]["memory"], name


def test_estimators_are_named_where_the_scheduler_discovers_them(rendered: list[dict[str, Any]]) -> None:
    scheduler = find(rendered, "Deployment", "fleetsched-scheduler")
    args = parse_command(scheduler["spec"]["template"]["spec"]["containers"][0]["args"])
    assert args.enable_scheduler_estimator is True
    for member in MEMBERS:
        service = find(rendered, "Service", f"{args.scheduler_estimator_service_prefix}-{member}")
        assert service["metadata"]["namespace"] == args.scheduler_estimator_service_namespace
        grpc = next(p for p in service["spec"]["ports"] if p["name"] == "grpc")
        assert grpc["port"] == args.scheduler_estimator_port
        estimator = find(rendered, "Deployment", service["metadata"]["name"])
        pod = estimator["spec"]["template"]["spec"]
        labels = estimator["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= labels.items()
        container = pod["containers"][0]
        served = parse_command(container["args"])
        assert served.cluster_name == member
        assert {p["name"]: p["containerPort"] for p in container["ports"]}["grpc"] == served.server_port
        assert grpc["targetPort"] == "grpc"
        # the member's kubeconfig, from the Secret Karmada's estimator uses, at the path given
        secret = next(v["secret"] for v in pod["volumes"] if "secret" in v)
        assert secret["secretName"] == f"{member}-kubeconfig"
        mount = next(m for m in container["volumeMounts"] if m["name"] == "member-kubeconfig")
        assert served.kubeconfig == f"{mount['mountPath']}/{secret['items'][0]['path']}"
        assert pod["automountServiceAccountToken"] is False


def test_the_webhook_configurations_carry_the_generated_ca(rendered: list[dict[str, Any]]) -> None:
    secret = next(d for d in rendered if d["kind"] == "Secret" and d["metadata"]["name"].startswith(
        "fleetsched-webhook-cert"))
    assert set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}
    webhook = find(rendered, "Deployment", "fleetsched-webhook")
    volumes = webhook["spec"]["template"]["spec"]["volumes"]
    assert any(v.get("secret", {}).get("secretName") == secret["metadata"]["name"] for v in volumes)
    hooks = [h for d in rendered if d["kind"].endswith("WebhookConfiguration") for h in d["webhooks"]]
    assert len(hooks) == 7
    for hook in hooks:
        ca_bundle = hook["clientConfig"]["caBundle"]
        assert re.sub(r"\s", "", ca_bundle) == re.sub(r"\s", "", secret["data"]["ca.crt"])


def _mounted_secret(pod: dict[str, Any], container: dict[str, Any], path: str) -> str:
    """``secret/key`` that a file path in the container comes from."""
    for mount in container["volumeMounts"]:
        prefix = mount["mountPath"].rstrip("/") + "/"
        if path.startswith(prefix):
            volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
            return f"{volume['secret']['secretName']}/{path[len(prefix):]}"
    raise AssertionError(f"{path} is not in any mounted volume")


def _secret_keys(docs: list[dict[str, Any]]) -> set[str]:
    """``name/key`` of every Secret in the render (generated names carry kustomize's hash, and the
    references to them are rewritten to match)."""
    return {f"{d['metadata']['name']}/{key}"
            for d in docs if d["kind"] == "Secret" for key in d.get("data", {})}


def test_scheduler_and_estimators_speak_mutual_tls_from_generated_secrets(
        rendered: list[dict[str, Any]]) -> None:
    keys = _secret_keys(rendered)
    scheduler = find(rendered, "Deployment", "fleetsched-scheduler")
    pod = scheduler["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args = parse_command(container["args"])
    client_files = (args.scheduler_estimator_ca_file, args.scheduler_estimator_cert_file,
                    args.scheduler_estimator_key_file)
    assert all(client_files), "the scheduler verifies the estimators and presents a client certificate"
    assert args.insecure_skip_estimator_verify is False
    for path in client_files:
        assert _mounted_secret(pod, container, path) in keys, path
    for member in MEMBERS:
        estimator = find(rendered, "Deployment", f"karmada-scheduler-estimator-{member}")
        pod = estimator["spec"]["template"]["spec"]
        container = pod["containers"][0]
        served = parse_command(container["args"])
        server_files = (served.grpc_auth_cert_file, served.grpc_auth_key_file, served.grpc_client_ca_file)
        assert all(server_files) and served.insecure_skip_grpc_client_verify is False, member
        for path in server_files:
            assert _mounted_secret(pod, container, path) in keys, path
        # its own certificate: the Secret generated for this member
        assert re.fullmatch(rf"karmada-scheduler-estimator-{member}-tls-[a-z0-9]+/tls\.crt",
                            _mounted_secret(pod, container, served.grpc_auth_cert_file))
    # no private key of a CA is in the install: only leaf keys (tls.key) and public CA certificates
    for doc in rendered:
        if doc["kind"] == "Secret":
            assert set(doc["data"]) <= {"tls.crt", "tls.key", "ca.crt"}, doc["metadata"]["name"]


def test_each_estimator_admits_only_the_scheduler_on_its_grpc_port(rendered: list[dict[str, Any]]) -> None:
    scheduler_labels = find(rendered, "Deployment", "fleetsched-scheduler")["spec"]["template"]["metadata"][
        "labels"]
    for member in MEMBERS:
        name = f"karmada-scheduler-estimator-{member}"
        estimator = find(rendered, "Deployment", name)
        container = estimator["spec"]["template"]["spec"]["containers"][0]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        policy = find(rendered, "NetworkPolicy", name)
        spec = policy["spec"]
        assert spec["podSelector"]["matchLabels"].items() <= estimator["spec"]["template"]["metadata"][
            "labels"].items()
        assert "Ingress" in spec["policyTypes"]
        grpc_rules = [r for r in spec["ingress"] if any(p["port"] in ("grpc", ports["grpc"])
                                                         for p in r.get("ports", ()))]
        assert len(grpc_rules) == 1, "one rule opens the gRPC port"
        sources = grpc_rules[0]["from"]
        assert sources and all(set(s) == {"podSelector"} for s in sources), "pods only, no IP blocks"
        for source in sources:
            assert source["podSelector"]["matchLabels"].items() <= scheduler_labels.items()
        # and the rules that leave other ports open name their ports, never the gRPC one
        for rule in spec["ingress"]:
            assert rule.get("ports"), "no rule admits every port"


# ---- RBAC ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rbac:
    """Who may do what, from the rendered Roles and bindings (the rules RBAC authorisation applies)."""

    docs: list[dict[str, Any]]
    account_namespace: str = NAMESPACE  # where the ServiceAccounts are

    def _rules(self, account: str, namespace: str | None) -> Iterator[dict[str, Any]]:
        subject = {"kind": "ServiceAccount", "name": account, "namespace": self.account_namespace}
        for binding in self.docs:
            if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
                continue
            if subject not in binding["subjects"]:
                continue
            if binding["kind"] == "RoleBinding" and binding["metadata"]["namespace"] != namespace:
                continue
            ref = binding["roleRef"]
            role_kind = ref["kind"]
            for role in self.docs:
                if role["kind"] != role_kind or role["metadata"]["name"] != ref["name"]:
                    continue
                if role_kind == "Role" and role["metadata"]["namespace"] != binding["metadata"]["namespace"]:
                    continue
                yield from role["rules"]

    def allows(self, account: str, verb: str, group: str, resource: str, *,
               namespace: str | None = None, name: str | None = None) -> bool:
        for rule in self._rules(account, namespace):
            if (verb in rule["verbs"] and group in rule["apiGroups"] and resource in rule["resources"]
                    and (not rule.get("resourceNames") or name in rule["resourceNames"])):
                return True
        return False

    def all_rules(self, account: str) -> list[dict[str, Any]]:
        return [*self._rules(account, NAMESPACE), *self._rules(account, "elsewhere")]


def container_args(docs: list[dict[str, Any]], name: str) -> argparse.Namespace:
    return parse_command(find(docs, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]["args"])


def test_scheduler_rbac_covers_what_the_scheduler_calls(rendered: list[dict[str, Any]]) -> None:
    rbac, sa = Rbac(rendered), "fleetsched-scheduler"
    args = container_args(rendered, "fleetsched-scheduler")
    for verb in ("get", "list", "watch"):
        assert rbac.allows(sa, verb, scheduler_store.CLUSTER_GROUP, "clusters")
    for plural in scheduler_store.PLURALS.values():
        for verb in ("get", "list", "watch", "patch"):
            assert rbac.allows(sa, verb, scheduler_store.WORK_GROUP, plural, namespace="any")
        assert rbac.allows(sa, "patch", scheduler_store.WORK_GROUP, f"{plural}/status", namespace="any")
        assert not rbac.allows(sa, "create", scheduler_store.WORK_GROUP, plural, namespace="any")
        assert not rbac.allows(sa, "delete", scheduler_store.WORK_GROUP, plural, namespace="any")
    assert rbac.allows(sa, "create", "", "events", namespace="any")
    lease = args.leader_elect_resource_name
    for verb in ("get", "create", "update"):
        assert rbac.allows(sa, verb, "coordination.k8s.io", "leases",
                           namespace=args.leader_elect_resource_namespace, name=lease)
    assert not rbac.allows(sa, "update", "coordination.k8s.io", "leases",
                           namespace=args.leader_elect_resource_namespace, name="fleetsched-controller")
    assert rbac.allows(sa, "get", "", "services", namespace=args.scheduler_estimator_service_namespace,
                       name=f"{args.scheduler_estimator_service_prefix}-member1")
    assert not rbac.allows(sa, "get", "", "services", namespace="default")


def test_controller_rbac_covers_every_default_template_kind(rendered: list[dict[str, Any]]) -> None:
    rbac, sa = Rbac(rendered), "fleetsched-controller"
    args = container_args(rendered, "fleetsched-controller")
    for resource_name in args.resources:
        resource = policy_operator.KNOWN_RESOURCES[resource_name]
        for verb in ("get", "list", "watch", "patch"):
            allowed = rbac.allows(sa, verb, resource.group, resource.plural, namespace="any")
            assert allowed, (verb, resource_name)
    for plural in policy_operator.POLICY_PLURALS.values():
        for verb in ("get", "list", "watch", "patch"):
            assert rbac.allows(sa, verb, policy_operator.POLICY_GROUP, plural, namespace="any")
    for plural in ("resourcebindings", "clusterresourcebindings"):
        for verb in ("get", "list", "watch", "create", "update", "patch", "delete"):
            assert rbac.allows(sa, verb, policy_operator.WORK_GROUP, plural, namespace="any")
    assert rbac.allows(sa, "get", "scheduling.k8s.io", "priorityclasses")
    assert rbac.allows(sa, "create", "", "events", namespace="any")
    for verb in ("get", "create", "update"):
        assert rbac.allows(sa, verb, "coordination.k8s.io", "leases",
                           namespace=args.leader_elect_resource_namespace,
                           name=args.leader_elect_resource_name)
    # the controller never schedules and never touches Clusters
    assert not rbac.allows(sa, "patch", policy_operator.WORK_GROUP, "resourcebindings/status",
                           namespace="any")
    assert not rbac.allows(sa, "list", "cluster.karmada.io", "clusters")


RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_PLURALS = ("roles", "rolebindings", "clusterroles", "clusterrolebindings")


def test_the_controller_leaves_out_secrets_and_rbac_kinds_by_default(rendered: list[dict[str, Any]]) -> None:
    args = container_args(rendered, "fleetsched-controller")
    assert args.resources == policy_operator.DEFAULT_RESOURCES
    left_out = {"secrets", *(f"{p}.{RBAC_GROUP}" for p in RBAC_PLURALS)}
    assert not left_out & set(args.resources)
    assert left_out <= set(policy_operator.OPT_IN_RESOURCES)
    rbac = Rbac(rendered)
    for account in ("fleetsched-scheduler", "fleetsched-controller"):
        for rule in rbac.all_rules(account):
            assert "secrets" not in rule["resources"], (account, rule)
            assert RBAC_GROUP not in rule["apiGroups"], (account, rule)
            assert not {"escalate", "bind"} & set(rule["verbs"]), (account, rule)


def with_components(tmp_path: Path, *components: str) -> list[dict[str, Any]]:
    """The install with opt-in components, through an overlay of the user's own beside manifests/."""
    prepared_tree(tmp_path)  # tmp_path/manifests
    overlay = tmp_path / "mine"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["../manifests"],
        "components": [f"../manifests/overlays/{c}" for c in components],
    }))
    return kustomize(overlay)


@pytest.mark.parametrize("components", [
    pytest.param(("propagate-secrets",), id="secrets"),
    pytest.param(("propagate-rbac",), id="rbac"),
    pytest.param(("propagate-secrets", "propagate-rbac"), id="both"),
])
def test_the_opt_in_overlays_add_their_kinds_with_the_rights_they_need(
    tmp_path: Path, components: tuple[str, ...]
) -> None:
    docs = with_components(tmp_path, *components)
    args = container_args(docs, "fleetsched-controller")
    added = set()
    if "propagate-secrets" in components:
        added |= set(policy_operator.SECRET_RESOURCES)
    if "propagate-rbac" in components:
        added |= set(policy_operator.RBAC_RESOURCES)
    assert set(args.resources) == {*policy_operator.DEFAULT_RESOURCES, *added}
    rbac, sa = Rbac(docs), "fleetsched-controller"
    for resource_name in args.resources:
        resource = policy_operator.KNOWN_RESOURCES[resource_name]
        for verb in ("get", "list", "watch", "patch"):
            allowed = rbac.allows(sa, verb, resource.group, resource.plural, namespace="any")
            assert allowed, (verb, resource_name)
    # patching a role or binding needs escalate and bind; nothing else gets them
    rbac_kinds = "propagate-rbac" in components
    for role in ("roles", "clusterroles"):
        for verb in ("escalate", "bind"):
            assert rbac.allows(sa, verb, RBAC_GROUP, role, namespace="any") is rbac_kinds
    for resource in (*RBAC_PLURALS, "secrets"):
        group = "" if resource == "secrets" else RBAC_GROUP
        for verb in ("create", "update", "delete"):
            assert not rbac.allows(sa, verb, group, resource, namespace="any")
    assert not rbac.allows("fleetsched-scheduler", "get", "", "secrets", namespace="any")


def test_the_claims_only_policy_covers_every_kind_and_claim_key_the_controller_writes(
    rendered: list[dict[str, Any]],
) -> None:
    """The ValidatingAdmissionPolicy holding the controller to claim labels must match every kind
    --resources can name (so the opt-in overlays are covered) and allow exactly the keys
    claim_patch and release_patch write."""
    policy = find(rendered, "ValidatingAdmissionPolicy", "fleetsched-controller-claims-only")
    binding = find(rendered, "ValidatingAdmissionPolicyBinding", "fleetsched-controller-claims-only")
    assert binding["spec"] == {"policyName": "fleetsched-controller-claims-only",
                               "validationActions": ["Deny"]}
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    covered = set()
    for rule in spec["matchConstraints"]["resourceRules"]:
        assert rule["operations"] == ["UPDATE"]
        covered |= {(g, r) for g in rule["apiGroups"] for r in rule["resources"]}
    assert covered == {(r.group, r.plural) for r in policy_operator.KNOWN_RESOURCES.values()}
    (condition,) = spec["matchConditions"]
    assert "':fleetsched-controller'" in condition["expression"]
    assert "fleetsched-controller" in names(rendered, "ServiceAccount")
    variables = {v["name"]: v["expression"] for v in spec["variables"]}
    claim_keys = set(re.findall(r"'([^']+)'", variables["claimKeys"]))
    written = {constants.PP_PERMANENT_ID_LABEL, constants.CPP_PERMANENT_ID_LABEL,
               constants.PP_NAMESPACE_ANNOTATION, constants.PP_NAME_ANNOTATION, constants.CPP_NAME_ANNOTATION}
    assert claim_keys == written
    for validation in spec["validations"]:
        assert validation["reason"] == "Forbidden"
        assert "fleetsched-controller-claims-only" in validation["message"]


def test_the_certificates_directory_holds_no_ca_key(tmp_path: Path) -> None:
    tree = prepared_tree(tmp_path)
    keys = {p.relative_to(tree).as_posix() for p in tree.rglob("*")
            if p.is_file() and b"PRIVATE KEY" in p.read_bytes()}
    # Only leaf keys: the webhook's serving key, and the estimators' and the scheduler's TLS keys.
    assert "certs/tls.key" in keys
    assert all(k.endswith("/tls.key") for k in keys), keys
    assert not any("ca" in Path(k).name for k in keys)


def test_no_component_holds_wildcards_and_the_webhook_holds_nothing(rendered: list[dict[str, Any]]) -> None:
    rbac = Rbac(rendered)
    for account in ("fleetsched-scheduler", "fleetsched-controller"):
        for rule in rbac.all_rules(account):
            assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"]
            assert not {"impersonate", "deletecollection"} & set(rule["verbs"])
    bound = {s.get("name") for d in rendered if d["kind"] in ("ClusterRoleBinding", "RoleBinding")
             for s in d["subjects"]}
    assert bound == {"fleetsched-scheduler", "fleetsched-controller"}
    for name in ("fleetsched-webhook", *(f"karmada-scheduler-estimator-{m}" for m in MEMBERS)):
        pod = find(rendered, "Deployment", name)["spec"]["template"]["spec"]
        assert pod["automountServiceAccountToken"] is False, name


def test_member_rbac_is_read_only_on_what_the_estimator_watches() -> None:
    docs = kustomize(MANIFESTS / "member")
    role = find(docs, "ClusterRole", "fleetsched-estimator")
    granted = {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert {("", "nodes"), ("", "pods"), ("apps", "deployments"), ("apps", "replicasets")} <= granted
    for rule in role["rules"]:
        assert set(rule["verbs"]) == {"get", "list", "watch"}


# ---- estimator generator ---------------------------------------------------------------------


def run_generator(out: Path, *names: str) -> subprocess.CompletedProcess[str]:
    # the CA goes beside this session's temporary directories, outside the directory kustomize would read
    ca = out.parent.parent / f"{out.parent.name}-estimator-ca"
    return subprocess.run([str(ROOT / "hack" / "gen-estimators.sh"), *names], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "ESTIMATORS_DIR": str(out),
                               "ESTIMATOR_CA_DIR": str(ca)})


@pytest.mark.parametrize(("name", "reason"), [
    ("Member1", "lower-case"),
    ("member_1", "lower-case"),
    ("-member", "start with a letter"),
    ("m" * 36, "at most 35"),
])
def test_the_estimator_generator_refuses_names_no_service_can_carry(tmp_path: Path, name: str,
                                                                  reason: str) -> None:
    done = run_generator(tmp_path, "ok", name)
    assert done.returncode == 2
    assert name in done.stderr and reason in done.stderr
    assert not (tmp_path / "ok.yaml").exists(), "nothing is written when a name is bad"


def test_the_estimator_generator_replaces_the_whole_set(tmp_path: Path) -> None:
    assert run_generator(tmp_path, "a1", "b2").returncode == 0
    assert run_generator(tmp_path, "b2").returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b2.yaml", "kustomization.yaml", "tls"]
    assert sorted(p.name for p in (tmp_path / "tls").iterdir()) == ["b2", "ca.crt", "scheduler"]
    kustomization = yaml.safe_load((tmp_path / "kustomization.yaml").read_text())
    assert kustomization["resources"] == ["b2.yaml"]
    assert [g["name"] for g in kustomization["secretGenerator"]] == [
        "fleetsched-scheduler-estimator-tls", "karmada-scheduler-estimator-b2-tls"]
    assert run_generator(tmp_path, "x", "x").returncode == 2


# ---- beside Karmada --------------------------------------------------------------------------


def test_beside_karmada_runs_only_the_scheduler_under_its_own_name_and_the_descheduler(
    beside_karmada: list[dict[str, Any]],
) -> None:
    assert sorted((d["kind"], d["metadata"]["name"]) for d in beside_karmada) == [
        ("Deployment", "fleetsched-descheduler"), ("Deployment", "fleetsched-scheduler"),
        ("Service", "fleetsched-descheduler-metrics"), ("Service", "fleetsched-scheduler-metrics"),
        ("ServiceAccount", "fleetsched-descheduler"), ("ServiceAccount", "fleetsched-scheduler"),
    ]
    deployment = find(beside_karmada, "Deployment", "fleetsched-scheduler")
    assert deployment["metadata"]["namespace"] == "karmada-system"
    pod = deployment["spec"]["template"]["spec"]
    args = parse_command(pod["containers"][0]["args"])
    assert args.command == "scheduler"
    assert args.scheduler_name not in ("", "default-scheduler")
    assert args.leader_elect is True and args.leader_elect_resource_namespace == "karmada-system"
    # Karmada's own estimators live in karmada-system under the default prefix
    assert args.scheduler_estimator_service_namespace == "karmada-system"
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "karmada-kubeconfig")
    assert args.kubeconfig.startswith(mount["mountPath"] + "/")
    assert pod["automountServiceAccountToken"] is False


@pytest.mark.parametrize(
    ("overlay", "scheduler_name", "lease"),
    [
        ("beside-karmada", "fleetsched-scheduler", "fleetsched-scheduler"),
        ("instead-of-karmada", "default-scheduler", "karmada-scheduler"),
    ],
)
def test_each_karmada_overlay_and_its_karmada_apiserver_rbac_agree(
    overlay: str, scheduler_name: str, lease: str
) -> None:
    """The Lease and the estimator Services are where the rights on karmada-apiserver are (the
    overlay once put its Lease in karmada-system while the rights were in fleetsched-system)."""
    deployment = find(kustomize(MANIFESTS / "overlays" / overlay), "Deployment", "fleetsched-scheduler")
    args = parse_command(deployment["spec"]["template"]["spec"]["containers"][0]["args"])
    assert args.scheduler_name == scheduler_name
    assert args.leader_elect_resource_name == lease
    rbac = kustomize(MANIFESTS / "overlays" / overlay / "karmada-apiserver")
    account = find(rbac, "ServiceAccount", "fleetsched-scheduler")["metadata"]["namespace"]
    role = find(rbac, "Role", "fleetsched-scheduler")
    assert role["metadata"]["namespace"] == args.leader_elect_resource_namespace
    assert role["metadata"]["namespace"] == args.scheduler_estimator_service_namespace
    lease_rules = [r for r in role["rules"] if r["resources"] == ["leases"]]
    named = {v for r in lease_rules if r.get("resourceNames") == [lease] for v in r["verbs"]}
    assert {"get", "update"} <= named
    assert any("create" in r["verbs"] for r in lease_rules)
    assert any(r["resources"] == ["services"] and "get" in r["verbs"] for r in role["rules"])
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        subjects = find(rbac, kind, "fleetsched-scheduler")["subjects"]
        assert subjects == [{"kind": "ServiceAccount", "name": "fleetsched-scheduler", "namespace": account}]
    cluster_role = find(rbac, "ClusterRole", "fleetsched-scheduler")
    assert cluster_role["rules"] == find(kustomize(MANIFESTS / "scheduler" / "rbac"), "ClusterRole",
                                         "fleetsched-scheduler")["rules"]


def test_the_beside_karmada_descheduler_holds_karmadas_lease_with_the_rights_granted_there(
    beside_karmada: list[dict[str, Any]],
) -> None:
    """A drop-in for karmada-descheduler: its Lease, so only one of the two works; its rights on
    karmada-apiserver are manifests/descheduler/rbac's, with that Lease named."""
    pod = find(beside_karmada, "Deployment", "fleetsched-descheduler")["spec"]["template"]["spec"]
    args = parse_command(pod["containers"][0]["args"])
    assert args.command == "descheduler"
    assert args.leader_elect is True
    assert (args.leader_elect_resource_namespace, args.leader_elect_resource_name) == (
        "karmada-system", "karmada-descheduler")
    assert args.scheduler_estimator_service_namespace == "karmada-system"
    assert pod["automountServiceAccountToken"] is False
    mounts = {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert mounts == {"/tmp", "/etc/karmada/config"}
    assert args.kubeconfig.startswith("/etc/karmada/config/")
    rbac_docs = kustomize(MANIFESTS / "overlays" / "beside-karmada" / "karmada-apiserver")
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        assert find(rbac_docs, kind, "fleetsched-descheduler")["subjects"] == [
            {"kind": "ServiceAccount", "name": "fleetsched-descheduler", "namespace": "karmada-system"}]
    rbac, sa = Rbac(rbac_docs, account_namespace="karmada-system"), "fleetsched-descheduler"
    for verb in ("get", "update"):
        assert rbac.allows(sa, verb, "coordination.k8s.io", "leases", namespace="karmada-system",
                           name="karmada-descheduler")
    assert not rbac.allows(sa, "update", "coordination.k8s.io", "leases", namespace="karmada-system",
                           name="karmada-scheduler")
    assert rbac.allows(sa, "update", "work.karmada.io", "resourcebindings", namespace="any")
    # the instead-of-karmada overlay builds on it and keeps it as it is
    instead = find(kustomize(MANIFESTS / "overlays" / "instead-of-karmada"), "Deployment",
                   "fleetsched-descheduler")
    assert instead["spec"]["template"]["spec"]["containers"][0]["args"] == pod["containers"][0]["args"]


def test_the_descheduler_component_adds_it_with_the_rights_it_calls(
    tmp_path: Path, rendered: list[dict[str, Any]]
) -> None:
    from fleetsched.descheduler import runner

    assert "fleetsched-descheduler" not in names(rendered, "Deployment")  # opt-in
    docs = with_components(tmp_path, "descheduler")
    deployment = find(docs, "Deployment", "fleetsched-descheduler")
    args = container_args(docs, "fleetsched-descheduler")
    assert args.command == "descheduler" and deployment["spec"]["replicas"] == 2
    assert deployment["metadata"]["labels"]["app.kubernetes.io/part-of"] == "fleetsched"
    rbac, sa = Rbac(docs), "fleetsched-descheduler"
    assert runner.CLUSTERS_PATH.startswith("/apis/cluster.karmada.io/")
    assert rbac.allows(sa, "list", "cluster.karmada.io", "clusters")
    assert runner.BINDINGS_PATH.startswith("/apis/work.karmada.io/")
    for verb in ("list", "update"):
        assert rbac.allows(sa, verb, "work.karmada.io", "resourcebindings", namespace="any")
    for verb in ("create", "delete", "patch"):
        assert not rbac.allows(sa, verb, "work.karmada.io", "resourcebindings", namespace="any")
    assert not rbac.allows(sa, "list", "work.karmada.io", "clusterresourcebindings", namespace="any")
    assert rbac.allows(sa, "create", "", "events", namespace="any")
    lease = args.leader_elect_resource_name
    for verb in ("get", "create", "update"):
        assert rbac.allows(sa, verb, "coordination.k8s.io", "leases",
                           namespace=args.leader_elect_resource_namespace, name=lease)
    assert not rbac.allows(sa, "update", "coordination.k8s.io", "leases",
                           namespace=args.leader_elect_resource_namespace, name="fleetsched-scheduler")
    assert rbac.allows(sa, "get", "", "services", namespace=args.scheduler_estimator_service_namespace,
                       name=f"{args.scheduler_estimator_service_prefix}-member1")
    for rule in rbac.all_rules(sa):
        assert "*" not in rule["verbs"] and "*" not in rule["resources"]
    # mutual TLS with the estimators: the scheduler's client certificate, mounted where the flags say
    pod = deployment["spec"]["template"]["spec"]
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "estimator-tls")
    for path in (args.scheduler_estimator_ca_file, args.scheduler_estimator_cert_file,
                 args.scheduler_estimator_key_file):
        assert path.startswith(mount["mountPath"] + "/")
    secret = next(v for v in pod["volumes"] if v["name"] == "estimator-tls")["secret"]["secretName"]
    assert secret.startswith("fleetsched-scheduler-estimator-tls") and secret in names(docs, "Secret")
    # and the estimators admit its pods on their gRPC port, beside the scheduler's
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    for member in MEMBERS:
        policy = find(docs, "NetworkPolicy", f"karmada-scheduler-estimator-{member}")
        sources = policy["spec"]["ingress"][0]["from"]
        apps = [source["podSelector"]["matchLabels"]["app"] for source in sources]
        assert apps == ["fleetsched-scheduler", "fleetsched-descheduler"]
        assert labels["app"] == "fleetsched-descheduler"


# ---- image -----------------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text()
    logical = re.sub(r"\\\n", " ", text)
    out = []
    for line in logical.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def test_the_image_runs_fleetsched_as_a_non_root_user() -> None:
    instructions = dockerfile_instructions()
    stages = [i for i, (k, _) in enumerate(instructions) if k == "FROM"]
    assert len(stages) >= 2, "multi-stage: build tools stay out of the runtime image"
    final = instructions[stages[-1]:]
    users = [rest for k, rest in final if k == "USER"]
    assert users, "the runtime stage sets USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "a numeric non-root UID lets runAsNonRoot verify it"
    assert ("ENTRYPOINT", '["fleetsched"]') in final
    assert any(k == "COPY" and rest.startswith("--from=") for k, rest in final)
    base = next(rest for k, rest in instructions if k == "ARG" and rest.startswith("PYTHON_IMAGE="))
    assert re.fullmatch(r"PYTHON_IMAGE=python:3\.11-slim(-\w+)?", base)
    pod_users = {d["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
                 for d in kustomize_plain_deployments()}
    assert pod_users == {int(uid)}, "the manifests run as the image's user"


def kustomize_plain_deployments() -> list[dict[str, Any]]:
    docs = []
    for path in MANIFESTS.rglob("*.yaml"):
        if path.name == "template.yaml" or "deployment" in path.name:
            docs += [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "Deployment"]
    return docs


def test_dependencies_are_installed_only_from_the_hashed_lock() -> None:
    runs = [rest for k, rest in dockerfile_instructions() if k == "RUN"]
    installs = [part for run in runs for part in run.split("&&") if " install " in part]
    assert installs
    for command in installs:
        if "-r " in command:
            assert "--require-hashes" in command and "--only-binary=:all:" in command, command
        else:
            assert "--no-deps" in command, f"{command}: everything else comes from the locks"
    assert any("-r requirements.lock" in c for c in installs)
    assert any("--no-build-isolation" in run for run in runs), "the build backend comes from its lock too"
    # .dockerignore excludes everything, then lets through exactly what the Dockerfile copies
    patterns = [line.rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()]
    assert "*" in patterns
    for k, rest in dockerfile_instructions():
        if k == "COPY" and not rest.startswith("--from="):
            for source in rest.split()[:-1]:
                assert f"!{source.rstrip('/')}" in patterns, f"{source} is copied but .dockerignore drops it"


def locked(path: Path) -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) from a pip-compile --generate-hashes file."""
    pins: dict[str, tuple[str, list[str]]] = {}
    current = None
    for line in path.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s\\]+)", line)
        if match:
            current = canonicalize_name(match[1])
            pins[current] = (match[2], [])
        elif current and (hash_match := re.search(r"--hash=(sha256:[0-9a-f]{64})", line)):
            pins[current][1].append(hash_match[1])
    return pins


def test_the_lock_pins_every_runtime_dependency_with_hashes() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = locked(ROOT / "requirements.lock")
    assert pins
    for text in project["dependencies"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not in requirements.lock: run hack/lock.sh"
        version, _ = pins[name]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"requirements.lock pins {name}=={version}, outside pyproject's {requirement.specifier}: "
            "run hack/lock.sh")
    for name, (_, hashes) in {**pins, **locked(ROOT / "requirements-build.lock")}.items():
        assert hashes, f"{name} has no hash"
    build = locked(ROOT / "requirements-build.lock")
    assert {"setuptools", "wheel"} <= set(build)
    backend = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    for text in backend:
        requirement = Requirement(text)
        assert requirement.specifier.contains(build[canonicalize_name(requirement.name)][0])


def test_the_shipped_estimator_list_is_the_generators_empty_set(tmp_path: Path) -> None:
    assert run_generator(tmp_path).returncode == 0
    shipped = MANIFESTS / "estimators"
    why = "manifests/estimators ships empty: run hack/gen-estimators.sh (no names) before committing"
    # tls/ is what the generator writes beside it, never committed (.gitignore)
    assert sorted(p.name for p in shipped.iterdir() if p.name != "tls") == ["kustomization.yaml"], why
    assert (shipped / "kustomization.yaml").read_text() == (tmp_path / "kustomization.yaml").read_text(), why


def test_the_lock_is_closed_under_the_installed_dependencies() -> None:
    """pip installs the lock with --no-deps: every requirement of every locked package must be locked too.

    The requirements are read from the metadata of the packages installed in this environment
    (which `pip install -e .` resolved from the same pyproject).
    """
    from importlib import metadata

    pins = locked(ROOT / "requirements.lock")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pending = [Requirement(text) for text in project["dependencies"]]
    seen: set[str] = set()
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        key = f"{name}[{','.join(sorted(requirement.extras))}]"
        if key in seen:
            continue
        seen.add(key)
        assert name in pins, f"{name} (needed at run time) is not in requirements.lock: run hack/lock.sh"
        extras = {"", *requirement.extras}
        for text in metadata.requires(name) or ():
            needed = Requirement(text)
            if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in extras):
                pending.append(needed)
    assert len(seen) > len(project["dependencies"])


@pytest.mark.parametrize(
    ("name", "base_replicas", "identity"),
    [
        pytest.param("fleetsched-scheduler", 2, "fleetsched-scheduler-7d4b9-x2x9q", id="scheduler"),
        pytest.param("fleetsched-controller", 1, "fleetsched-controller-5c9f8-q7k2m", id="policy controller"),
    ],
)
def test_the_sharded_overlay_runs_three_members_with_the_rights_their_leases_need(
    tmp_path: Path, name: str, base_replicas: int, identity: str
) -> None:
    from fleetsched.controller.runtime import command

    docs = with_components(tmp_path, "sharded")
    deployment = find(docs, "Deployment", name)
    assert deployment["spec"]["replicas"] == 3
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    args = parse_command(container["args"])
    assert (args.shard_mode, args.shard_identity) == ("lease", "$(POD_NAME)")
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes"}
    args.shard_identity = identity  # what Kubernetes substitutes
    shard = command.sharding(args)
    assert shard is not None and command.leader_election(args) is None
    assert shard.member == f"{name}-{identity}"
    rbac = Rbac(docs)
    for verb in ("get", "list", "create", "update", "delete"):
        assert rbac.allows(name, verb, "coordination.k8s.io", "leases", namespace=shard.namespace,
                           name=shard.member), verb
        assert not rbac.allows(name, verb, "coordination.k8s.io", "leases", namespace="elsewhere",
                               name=shard.member), verb
    # the webhook is left alone; the base install is unchanged: one Lease, no sharding
    webhook = find(docs, "Deployment", "fleetsched-webhook")["spec"]["template"]["spec"]["containers"][0]
    assert not any(arg.startswith("--shard") for arg in webhook.get("args") or ())
    base = find(kustomize(prepared_tree(tmp_path / "base")), "Deployment", name)
    assert base["spec"]["replicas"] == base_replicas
    assert parse_command(base["spec"]["template"]["spec"]["containers"][0]["args"]).shard_mode == "none"


def test_the_sharded_policy_controller_keeps_the_install_s_other_settings(tmp_path: Path) -> None:
    docs = with_components(tmp_path, "sharded")
    container = find(docs, "Deployment", "fleetsched-controller")["spec"]["template"]["spec"]["containers"][0]
    assert parse_command(container["args"]).standalone
