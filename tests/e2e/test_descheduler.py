"""``fleetsched descheduler`` end to end: two member kube-apiservers with their estimators, the
control plane, the descheduler and the scheduler, all real processes.

Member m1 has one node, full: of the Deployment's 3 pods there, one runs and two have been
``PodScheduled=False`` (``Unschedulable``) for longer than the threshold; m2 has room. The
binding (10 replicas, m1 3, m2 7, dynamic weights) is as the scheduler left it, so the scheduler
has nothing to do until the descheduler, asking m1's estimator ``GetUnschedulableReplicas``, takes
m1 down to its one ready replica; the scheduler then places the 2 on m2 (a scale-up):
m1 1, m2 9, and the Event reads as karmada-descheduler's.

The beside-Karmada overlay's descheduler runs with the overlay's own arguments (kubeconfig,
listen addresses and the two intervals changed) as the identity its karmada-apiserver RBAC
grants, on karmada-descheduler's Lease, and deschedules another Deployment's binding.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.component.estimator.stories import placed
from tests.e2e.test_estimator_stories import EstimatorProcess, _create_nodes
from tests.e2e.test_install import MANIFESTS, Component, container_args, override, render
from tests.e2e.test_scheduler_estimators import estimator_service
from tests.support.controlplane import APIServer, ControlPlane, free_port, wait_until
from tests.support.karmada import POLICY_LABEL, apply_with_status, get_json
from tests.support.processes import SchedulerProcess

SYSTEM = "karmada-system"
MEMBERS = ("m1", "m2")
PLACEMENT = {
    "clusterAffinity": {"clusterNames": list(MEMBERS)},
    "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                          "weightPreference": {"dynamicWeight": "AvailableReplicas"}},
}
MESSAGE = "Binding has been descheduled, 2 replica(s) in cluster(m1), 2 total descheduled replica(s)"


@dataclass
class Fleet:
    server: APIServer
    members: dict[str, APIServer]


def node(name: str, cpu: str) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": "64Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": capacity, "capacity": capacity,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


def cluster(name: str, cpu: str, allocated: str) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
        "spec": {"syncMode": "Push"},
        "status": {
            "apiEnablements": [{"groupVersion": "apps/v1",
                                "resources": [{"name": "deployments", "kind": "Deployment"}]}],
            "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "ready",
                            "lastTransitionTime": "2024-01-01T00:00:00Z"}],
            "resourceSummary": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"},
                                "allocated": {"cpu": allocated}},
        },
    }


def stuck_deployment(member: APIServer, name: str, *, running: int, pending: int) -> None:
    """A Deployment in ``member`` with its ReplicaSet (no controller manager runs there) and its
    pods: ``running`` on node m1-node (1 CPU each) and ``pending`` unschedulable since 2020."""
    labels = {"app": name}
    template = {"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1",
                                         "resources": {"requests": {"cpu": "1"}}}]}}
    deployment = member.request("POST", "/apis/apps/v1/namespaces/default/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": running + pending, "selector": {"matchLabels": labels}, "template": template},
    })
    hashed = {**labels, "pod-template-hash": "1"}
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
             "uid": deployment["metadata"]["uid"], "controller": True}  # type: ignore[index]
    replica_set = member.request("POST", "/apis/apps/v1/namespaces/default/replicasets", {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": f"{name}-1", "namespace": "default", "labels": hashed,
                     "ownerReferences": [owner]},
        "spec": {"replicas": running + pending, "selector": {"matchLabels": hashed},
                 "template": {**template, "metadata": {"labels": hashed}}},
    })
    rs_owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{name}-1",
                "uid": replica_set["metadata"]["uid"], "controller": True}  # type: ignore[index]
    for i in range(running + pending):
        pod_name = f"{name}-1-{i}"
        spec = json.loads(json.dumps(template["spec"]))
        if i < running:
            spec["nodeName"] = "m1-node"
        path = f"/api/v1/namespaces/default/pods/{pod_name}"
        pod = member.request("POST", "/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod_name, "namespace": "default", "labels": hashed,
                         "ownerReferences": [rs_owner]},
            "spec": spec,
        })
        if i < running:
            pod["status"] = {"phase": "Running", "conditions": [  # type: ignore[index]
                {"type": "Ready", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}]}
        else:
            pod["status"] = {"phase": "Pending", "conditions": [  # type: ignore[index]
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/1 nodes are available: 1 Insufficient cpu.",
                 "lastTransitionTime": "2020-01-01T00:00:00Z"}]}
        member.request("PUT", f"{path}/status", pod)


def scheduled_binding(name: str, clusters: dict[str, int], ready: dict[str, int]) -> dict[str, Any]:
    """The binding as the scheduler leaves it (result, applied placement, Scheduled, observed
    generation) with the members' ready replicas aggregated."""
    return {
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": "default", "labels": {POLICY_LABEL: "e2e"},
                     "annotations": {"policy.karmada.io/applied-placement": json.dumps(PLACEMENT)}},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": name},
            "replicas": sum(clusters.values()),
            "replicaRequirements": {"resourceRequest": {"cpu": "1"}},
            "placement": PLACEMENT,
            "clusters": [{"name": c, "replicas": n} for c, n in clusters.items()],
        },
        "status": {
            "schedulerObservedGeneration": 1,
            "conditions": [{"type": "Scheduled", "status": "True", "reason": "Success",
                            "message": "Binding has been scheduled successfully.",
                            "lastTransitionTime": "2024-01-01T00:00:00Z"}],
            "aggregatedStatus": [{"clusterName": c, "applied": True, "status": {"readyReplicas": n}}
                                 for c, n in ready.items()],
        },
    }


@pytest.fixture(scope="module")
def fleet(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory,
          isolated_apiserver: APIServer) -> Iterator[Fleet]:
    """m1 (one node with 1 CPU, taken by a running pod) and m2 (64 CPUs), each with its estimator
    behind Karmada's ExternalName Service, and their Clusters, ready."""
    logs = tmp_path_factory.mktemp("estimators")
    members: dict[str, APIServer] = {}
    estimators: list[EstimatorProcess] = []
    try:
        for name, cpu in (("m1", "1"), ("m2", "64")):
            member = control_plane.add_apiserver(f"desched-{name}")
            members[name] = member
            _create_nodes(member, [node(f"{name}-node", cpu)])
            process = EstimatorProcess(name, member, logs / f"estimator-{name}.log")
            estimators.append(process)
            process.start()
            isolated_apiserver.apply(estimator_service(name, process.port))
        apply_with_status(isolated_apiserver, [cluster("m1", "1", "1"), cluster("m2", "64", "0")])
        yield Fleet(isolated_apiserver, members)
    finally:
        for process in estimators:
            process.stop()
        for name in members:
            control_plane.remove_apiserver(f"desched-{name}")


def events_of(server: APIServer, kind: str, name: str) -> list[dict[str, Any]]:
    found = get_json(server, "events", "-n", "default", "--field-selector",
                     f"involvedObject.kind={kind},involvedObject.name={name}")
    return [e for e in found["items"] if e["reason"].startswith("Deschedule")]


def clusters_of(server: APIServer, name: str) -> dict[str, int]:
    return placed(get_json(server, "rb", "-n", "default", name))


def test_unschedulable_replicas_move_to_the_member_with_room(
    fleet: Fleet, start_scheduler: Any, tmp_path: Path
) -> None:
    server = fleet.server
    stuck_deployment(fleet.members["m1"], "web", running=1, pending=2)
    apply_with_status(server, [scheduled_binding("web", {"m1": 3, "m2": 7}, {"m1": 1, "m2": 7})])
    scheduler: SchedulerProcess = start_scheduler(
        server, "--leader-elect=false", "--enable-scheduler-estimator", "--scheduler-estimator-timeout=5s",
    )
    assert clusters_of(server, "web") == {"m1": 3, "m2": 7}  # nothing for the scheduler to do
    port = free_port()
    descheduler = Component(
        kubeconfig=server.kubeconfig, log_path=tmp_path / "descheduler.log", port=port,
        args=("descheduler", f"--kubeconfig={server.kubeconfig}", "--leader-elect=false",
              "--descheduling-interval=1s", "--unschedulable-threshold=1s",
              "--scheduler-estimator-timeout=5s",
              f"--metrics-bind-address=127.0.0.1:{port}", f"--health-probe-bind-address=127.0.0.1:{port}"),
    )
    try:
        descheduler.start()
        wait_until(lambda: clusters_of(server, "web") == {"m1": 1, "m2": 9}, timeout=45,
                   message=lambda: f"{clusters_of(server, 'web')}\n{descheduler.log_tail()}\n"
                                   f"{scheduler.log_tail()}")
        for kind, name in (("ResourceBinding", "web"), ("Deployment", "web")):
            events = wait_until(lambda k=kind, n=name: events_of(server, k, n), timeout=15,
                                message=f"no Event on the {kind}")
            assert [(e["type"], e["reason"], e["message"]) for e in events] == [
                ("Normal", "DescheduleBindingSucceed", MESSAGE)]
        # later rounds leave it alone: m1's one replica is ready, m2 has no stuck pods
        rounds = descheduler.metric("fleetsched_descheduler_rounds_total", result="success")
        wait_until(lambda: descheduler.metric("fleetsched_descheduler_rounds_total", result="success")
                   >= rounds + 2, timeout=15, message=descheduler.log_tail)
        assert clusters_of(server, "web") == {"m1": 1, "m2": 9}
        assert descheduler.metric("fleetsched_descheduler_descheduled_replicas_total", cluster="m1") == 2
    finally:
        descheduler.stop()


def as_account_kubeconfig(server: APIServer, account: str, path: Path) -> Path:
    token = server.kubectl("create", "token", account, "-n", SYSTEM, "--duration=1h").strip()
    admin = yaml.safe_load(server.kubeconfig.read_text())
    context = admin["clusters"][0]
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "clusters": [context],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": account, "context": {"cluster": context["name"], "user": account}}],
        "current-context": account,
    }))
    path.chmod(0o600)
    return path


def test_the_beside_karmada_descheduler_runs_as_its_identity_on_karmadas_lease(
    fleet: Fleet, tmp_path: Path
) -> None:
    server = fleet.server
    server.kubectl("apply", "-k", str(MANIFESTS / "overlays" / "beside-karmada" / "karmada-apiserver"))
    kubeconfig = as_account_kubeconfig(server, "fleetsched-descheduler", tmp_path / "kubeconfig")
    overlay = render(MANIFESTS / "overlays" / "beside-karmada", server)
    rendered = container_args(overlay, "fleetsched-descheduler")
    assert "--leader-elect-resource-name=karmada-descheduler" in rendered
    port = free_port()
    args = override(rendered, kubeconfig=str(kubeconfig), metrics_bind_address=f"127.0.0.1:{port}",
                    health_probe_bind_address=f"127.0.0.1:{port}", descheduling_interval="1s",
                    unschedulable_threshold="1s")
    stuck_deployment(fleet.members["m1"], "api", running=0, pending=2)
    apply_with_status(server, [scheduled_binding("api", {"m1": 2, "m2": 4}, {"m2": 4})])
    descheduler = Component(kubeconfig=kubeconfig, log_path=tmp_path / "beside.log", port=port,
                            args=tuple(args))
    try:
        descheduler.start()
        wait_until(lambda: clusters_of(server, "api") == {"m1": 0, "m2": 4}, timeout=45,
                   message=descheduler.log_tail)
        lease = get_json(server, "lease", "karmada-descheduler", "-n", SYSTEM)
        assert lease["spec"]["holderIdentity"]
        events = wait_until(lambda: events_of(server, "ResourceBinding", "api"), timeout=15,
                            message="no Event")
        assert [e["message"] for e in events] == [
            "Binding has been descheduled, 2 replica(s) in cluster(m1), 2 total descheduled replica(s)"]
        assert "forbidden" not in descheduler.log_path.read_text().lower()
    finally:
        descheduler.stop()
