"""Two policy-controller replicas in lease mode share the templates (issue 15: "the policy
controller gets the same mode").

Both replicas watch and cache everything; each claims templates, and creates their bindings,
only for the templates its member name wins by rendezvous hashing of the template's UID. With
four policies and 200 Deployments, every Deployment ends up with exactly one binding carrying its
policy's placement; the apiserver's managedFields name the writer of every binding and every
claim, and it is always the template's rendezvous owner (fieldManager ``<agent>/<member>``), the
other replica never. After one replica stops gracefully (it deletes its member Lease), the other
owns everything: a new template gets its binding from it. Before that, deleting one policy
releases each of its claims through the claimed template's owner, and the policy's finalizer goes
once none is left. And the install with ``manifests/overlays/sharded``: two controllers run with the
rendered Deployment's arguments as its ServiceAccount hold their member Leases and work.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.controller.runtime.shard import member_name, rendezvous_owner
from tests.e2e.test_install import (
    Component,
    container_args,
    override,
    prepared_tree,
    render,
    service_account_kubeconfig,
)
from tests.e2e.test_policy_controller import ControllerProcess
from tests.support.controlplane import APIServer, ControlPlane, free_port, wait_until

NAMESPACE = "sharded-policies"
GROUP = "fleetsched-controller"
AGENT = "fleetsched-controller"
PP_LABEL = "propagationpolicy.karmada.io/permanent-id"
POLICIES = {  # policy name -> the placement's cluster names
    "p0": ["m1"],
    "p1": ["m2"],
    "p2": ["m1", "m2"],
    "p3": ["m3"],
}
DEPLOYMENTS = 200
LEASE_FLAGS = (
    "--shard-mode=lease",
    "--leader-elect-resource-namespace=karmada-system",
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=1s",
)
MEMBERS = {identity: member_name(GROUP, identity) for identity in ("r0", "r1")}


def policy_id(index: int) -> str:
    return f"00000000-0000-4000-8000-{index:012d}"


def policies() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "labels": {PP_LABEL: policy_id(index)},
                "finalizers": ["karmada.io/propagation-policy-controller"],
            },
            "spec": {
                "resourceSelectors": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "labelSelector": {"matchLabels": {"p": name}},
                    }
                ],
                "placement": {"clusterAffinity": {"clusterNames": clusters}},
            },
        }
        for index, (name, clusters) in enumerate(POLICIES.items())
    ]


def deployment(index: int, *, prefix: str = "web") -> dict[str, Any]:
    name, policy = f"{prefix}-{index}", f"p{index % len(POLICIES)}"
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name, "p": policy}},
        "spec": {
            "replicas": 1 + index % 3,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def listed(server: APIServer, kind: str) -> dict[str, dict[str, Any]]:
    out = server.kubectl("get", kind, "-n", NAMESPACE, "-o", "json", "--show-managed-fields")
    items = json.loads(out)["items"]
    return {item["metadata"]["name"]: item for item in items}


def managers(obj: dict[str, Any]) -> set[str]:
    """The field managers of ``obj`` that are policy-controller replicas."""
    return {
        entry["manager"]
        for entry in obj["metadata"].get("managedFields") or ()
        if entry.get("manager", "").startswith(f"{AGENT}/")
    }


@pytest.fixture
def start_replica(
    isolated_apiserver: APIServer, tmp_path: Path
) -> Iterator[Callable[[str], ControllerProcess]]:
    started: list[ControllerProcess] = []

    def start(identity: str) -> ControllerProcess:
        process = ControllerProcess(
            kubeconfig=isolated_apiserver.kubeconfig,
            log_path=tmp_path / f"controller-{identity}.log",
            extra_args=(*LEASE_FLAGS, f"--shard-identity={identity}", "--workers=4"),
        )
        started.append(process)
        process.start(timeout=90)
        return process

    yield start
    for process in started:
        process.stop()


def test_two_replicas_split_the_templates_and_one_takes_over_when_the_other_stops(
    isolated_apiserver: APIServer, start_replica: Callable[[str], ControllerProcess]
) -> None:
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    replicas = {identity: start_replica(identity) for identity in MEMBERS}
    members = sorted(MEMBERS.values())

    def both_members_seen() -> bool:
        return all(r.metric("fleetsched_policy_controller_shard_members") == 2 for r in replicas.values())

    wait_until(
        both_members_seen, timeout=60, message=lambda: "\n".join(r.log_tail() for r in replicas.values())
    )

    server.apply(yaml.safe_dump_all(policies()))
    server.apply(yaml.safe_dump_all([deployment(i) for i in range(DEPLOYMENTS)]))

    def bindings_for(names: set[str]) -> dict[str, dict[str, Any]] | None:
        found = listed(server, "resourcebindings.work.karmada.io")
        return found if {f"{n}-deployment" for n in names} <= set(found) else None

    names = {f"web-{i}" for i in range(DEPLOYMENTS)}
    bindings = wait_until(
        lambda: bindings_for(names),
        timeout=180,
        interval=2,
        message=lambda: "bindings missing:\n" + "\n".join(r.log_tail(30) for r in replicas.values()),
    )
    assert len(bindings) == DEPLOYMENTS, "exactly one binding per template, nothing else"
    templates = listed(server, "deployments")
    writers: dict[str, int] = {}
    for name, template in templates.items():
        uid = template["metadata"]["uid"]
        owner = rendezvous_owner(uid, members)
        policy = template["metadata"]["labels"]["p"]
        binding = bindings[f"{name}-deployment"]
        assert binding["spec"]["resource"]["uid"] == uid
        assert binding["spec"]["placement"]["clusterAffinity"] == {"clusterNames": POLICIES[policy]}
        assert binding["metadata"]["labels"][PP_LABEL] == policy_id(int(policy[1:]))
        # written by the template's owner only: the binding (created) and the claim on the template
        assert managers(binding) == {f"{AGENT}/{owner}"}, (name, binding["metadata"]["managedFields"])
        assert managers(template) == {f"{AGENT}/{owner}"}, (name, template["metadata"]["managedFields"])
        writers[owner] = writers.get(owner, 0) + 1
    assert set(writers) == set(members), f"both replicas wrote their share: {writers}"
    # (the gauge counts every template kind watched: also the API server's own ConfigMaps)
    owned = {
        identity: process.metric("fleetsched_policy_controller_owned_objects", kind="template")
        for identity, process in replicas.items()
    }
    for identity, process in replicas.items():
        assert owned[identity] >= writers[MEMBERS[identity]]
        log = process.log_path.read_text()
        assert '"worker_error"' not in log and "Traceback" not in log, process.log_tail(60)

    # Deleting a policy: each template's owner releases its claim (template and binding), and the
    # policy's owner removes the finalizer only once no template carries the claim any more.
    server.kubectl("delete", "pp", "p3", "-n", NAMESPACE, "--wait=false")
    wait_until(
        lambda: not server.kubectl("get", "pp", "p3", "-n", NAMESPACE, "--ignore-not-found").strip(),
        timeout=60,
        message=lambda: (
            "policy finalizer never removed:\n" + "\n".join(r.log_tail(30) for r in replicas.values())
        ),
    )
    templates, bindings = listed(server, "deployments"), listed(server, "resourcebindings.work.karmada.io")
    released = [name for name, t in templates.items() if t["metadata"]["labels"]["p"] == "p3"]
    assert len(released) == DEPLOYMENTS // len(POLICIES)
    for name in released:
        owner = rendezvous_owner(templates[name]["metadata"]["uid"], members)
        assert PP_LABEL not in templates[name]["metadata"]["labels"], name
        assert PP_LABEL not in (bindings[f"{name}-deployment"]["metadata"].get("labels") or {}), name
        # (the release took the controller's last fields off the template: no managedFields entry
        # names a replica there now; the binding keeps the creator's)
        assert managers(templates[name]) == set()
        assert managers(bindings[f"{name}-deployment"]) == {f"{AGENT}/{owner}"}

    # r0 stops gracefully: it deletes its member Lease and r1 owns everything at its next LIST.
    assert replicas["r0"].stop() == 0
    survivor = replicas["r1"]
    wait_until(
        lambda: survivor.metric("fleetsched_policy_controller_shard_members") == 1,
        timeout=30,
        message=survivor.log_tail,
    )
    assert (
        survivor.metric("fleetsched_policy_controller_shard_handoffs_total", direction="in")
        >= writers[MEMBERS["r0"]]
    )
    late_indices = (0, 1, 2, 4, 5)  # for p0, p1 and p2 (p3 is gone)
    late = {f"late-{i}" for i in late_indices}
    server.apply(yaml.safe_dump_all([deployment(i, prefix="late") for i in late_indices]))
    after = wait_until(lambda: bindings_for(late), timeout=60, interval=1, message=survivor.log_tail)
    for name in late:
        assert managers(after[f"{name}-deployment"]) == {f"{AGENT}/{MEMBERS['r1']}"}
    # every template was owned by exactly one of the two: the survivor now owns them all
    assert survivor.metric("fleetsched_policy_controller_owned_objects", kind="template") == sum(
        owned.values()
    ) + len(late)


def test_the_sharded_overlay_lets_two_controller_members_work_as_their_service_account(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """``kubectl apply -k`` of the install with overlays/sharded, then two policy controllers with
    the rendered Deployment's arguments and a token of its ServiceAccount: both hold their member
    Leases (the overlay's Role), divide the templates and bind them, and nothing is forbidden."""
    server = control_plane.add_apiserver("policy-sharded-install", apply_crds=False)
    started: list[Component] = []
    try:
        prepared_tree(tmp_path)  # tmp_path/manifests, beside the overlay of our own
        overlay = tmp_path / "mine"
        overlay.mkdir()
        (overlay / "kustomization.yaml").write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kustomize.config.k8s.io/v1beta1",
                    "kind": "Kustomization",
                    "resources": ["../manifests"],
                    "components": ["../manifests/overlays/sharded"],
                }
            )
        )
        server.kubectl("apply", "-k", str(overlay))
        server.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        # no webhook runs here: its configurations (failurePolicy Fail) would refuse every policy
        server.kubectl(
            "delete",
            "mutatingwebhookconfiguration/fleetsched-mutating-config",
            "validatingwebhookconfiguration/fleetsched-validating-config",
        )
        kubeconfig = service_account_kubeconfig(server, "fleetsched-controller", tmp_path / "sa.kubeconfig")
        args = container_args(render(overlay, server), "fleetsched-controller")
        assert "--shard-mode=lease" in args
        for identity in MEMBERS:
            port = free_port()
            flags = override(
                args,
                kubeconfig=str(kubeconfig),
                shard_identity=identity,
                metrics_bind_address=f"127.0.0.1:{port}",
                health_probe_bind_address=f"127.0.0.1:{port}",
                leader_elect_lease_duration="4s",
                leader_elect_renew_deadline="3s",
                leader_elect_retry_period="1s",
            )
            process = Component(
                kubeconfig=kubeconfig, log_path=tmp_path / f"{identity}.log", port=port, args=tuple(flags)
            )
            started.append(process)
            process.start(timeout=90)  # /readyz: synced and holding its member Lease
        wait_until(
            lambda: all(p.metric("fleetsched_policy_controller_shard_members") == 2 for p in started),
            timeout=60,
            message=lambda: "\n".join(p.log_tail() for p in started),
        )
        server.kubectl("create", "namespace", NAMESPACE)
        server.apply(yaml.safe_dump_all([*policies(), *(deployment(i) for i in range(20))]))
        names = {f"web-{i}" for i in range(20)}
        bindings = wait_until(
            lambda: (
                (found := listed(server, "resourcebindings.work.karmada.io"))
                and {f"{n}-deployment" for n in names} <= set(found)
                and found
            ),
            timeout=90,
            interval=1,
            message=lambda: "\n".join(p.log_tail(30) for p in started),
        )
        templates = listed(server, "deployments")
        members = sorted(MEMBERS.values())
        for name in names:
            owner = rendezvous_owner(templates[name]["metadata"]["uid"], members)
            assert managers(bindings[f"{name}-deployment"]) == {f"{AGENT}/{owner}"}
        for process in started:
            log = process.log_path.read_text().lower()
            assert "forbidden" not in log and "traceback" not in log, process.log_tail(60)
    finally:
        for process in started:
            process.stop()
        control_plane.remove_apiserver("policy-sharded-install")
