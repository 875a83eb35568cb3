"""The user's whole story on a real kube-apiserver, with the install's own pieces.

Every component runs as a process of the code the image runs (``python -m fleetsched`` with the
container args of the rendered manifests; only listen addresses, the certificate directory and
the kubeconfig are changed for loopback), and the scheduler and the controller authenticate as
their ServiceAccounts with the RBAC from manifests/ (and the controller under its admission policy,
``fleetsched-controller-claims-only``), so a missing permission fails the story.
The webhook is registered through the rendered configurations (caBundle from hack/gen-certs.sh,
clientConfig by URL). The scheduler runs as two replicas under one Lease, as the Deployment does.
kube-controller-manager runs only its garbage collector, as in any cluster.

1. ``kubectl apply -f crds/``, the example Clusters, then the ``web`` Deployment and
   PropagationPolicy from examples/policies.yaml;
2. the ResourceBinding appears with the policy's placement and gets scheduled exactly as
   ``fleetsched simulate`` schedules the same files;
3. scaling the Deployment changes the binding's replicas and the scheduler's division;
4. deleting the Deployment deletes the binding: garbage collection through its owner reference,
   and the controller (``--standalone=true`` in the install) removes Karmada's
   ``karmada.io/binding-controller`` finalizer, which no binding controller removes here;
5. an invalid policy is rejected by the webhook through the apiserver, with Karmada's message.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_install import (
    Component,
    container_args,
    override,
    prepared_tree,
    render,
    service_account_kubeconfig,
)
from tests.support.controlplane import APIServer, ControllerManager, ControlPlane, free_port, wait_until
from tests.support.karmada import apply_with_status, load_documents

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "fleetsched-system"
PP_LABEL = "propagationpolicy.karmada.io/permanent-id"
BINDING_FINALIZER = "karmada.io/binding-controller"
RBAC_KINDS = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
              "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


# ---- the install, rendered -------------------------------------------------------------------


@dataclass
class Story:
    server: APIServer
    tree: Path
    scheduler: Component
    standby: Component
    controller: Component
    webhook: Component

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        return self.server.kubectl(*args, input=input, check=check)

    def get(self, *args: str) -> dict[str, Any] | None:
        out = self.kubectl("get", *args, "-o", "json", "--ignore-not-found")
        return json.loads(out) if out.strip() else None

    def logs(self) -> str:
        return "\n".join(f"--- {name}:\n{proc.log_tail(25)}" for name, proc in
                         (("scheduler", self.scheduler), ("controller", self.controller),
                          ("webhook", self.webhook)))

    def wait_for(self, what: str, probe: Callable[[], Any], timeout: float = 90) -> Any:
        return wait_until(probe, timeout=timeout, interval=0.5, message=lambda: f"{what}:\n{self.logs()}")


@pytest.fixture(scope="module")
def story(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    workdir = tmp_path_factory.mktemp("story")
    server = control_plane.add_apiserver("story", apply_crds=False)
    started: list[Any] = []
    try:
        server.kubectl("apply", "-f", str(ROOT / "crds"))
        server.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        garbage_collector = ControllerManager(binaries=control_plane.binaries, workdir=workdir / "kcm",
                                              kubeconfig=server.kubeconfig)
        garbage_collector.start()
        started.append(garbage_collector)

        tree = prepared_tree(workdir, members=())
        docs = render(tree, server)
        server.apply(yaml.safe_dump_all([d for d in docs if d["kind"] in RBAC_KINDS]))

        webhook_port, probe_port = free_port(), free_port()
        webhook = Component(
            kubeconfig=server.kubeconfig, log_path=workdir / "webhook.log", port=probe_port,
            args=tuple(override(container_args(docs, "fleetsched-webhook"), bind_address="127.0.0.1",
                                secure_port=str(webhook_port), cert_dir=str(tree / "certs"),
                                metrics_bind_address=f"127.0.0.1:{probe_port}",
                                health_probe_bind_address=f"127.0.0.1:{probe_port}")),
        )
        started.append(webhook)
        webhook.start(timeout=60)
        configurations = [copy.deepcopy(d) for d in docs if d["kind"].endswith("WebhookConfiguration")]
        for configuration in configurations:
            for hook in configuration["webhooks"]:
                path = hook["clientConfig"].pop("service")["path"]
                hook["clientConfig"]["url"] = f"https://127.0.0.1:{webhook_port}{path}"
                assert hook["clientConfig"]["caBundle"], "the install carries the CA"
        server.apply(yaml.safe_dump_all(configurations))

        processes = {}
        tls = tree / "estimators" / "tls"  # what the Secret fleetsched-scheduler-estimator-tls holds
        mounted = {"scheduler": {"scheduler_estimator_ca_file": str(tls / "ca.crt"),
                                 "scheduler_estimator_cert_file": str(tls / "scheduler" / "tls.crt"),
                                 "scheduler_estimator_key_file": str(tls / "scheduler" / "tls.key")},
                   "controller": {}}
        for command in ("scheduler", "controller"):
            port = free_port()
            kubeconfig = service_account_kubeconfig(server, f"fleetsched-{command}",
                                                    workdir / f"{command}.kubeconfig")
            process = Component(
                kubeconfig=kubeconfig, log_path=workdir / f"{command}.log", port=port,
                args=tuple(override(container_args(docs, f"fleetsched-{command}"), kubeconfig=str(kubeconfig),
                                    metrics_bind_address=f"127.0.0.1:{port}",
                                    health_probe_bind_address=f"127.0.0.1:{port}", **mounted[command])),
            )
            started.append(process)
            process.start(timeout=90)  # /readyz: caches synced and the Lease held
            processes[command] = process
        # The Deployment's second scheduler replica: a standby under the same Lease and identity.
        standby_port = free_port()
        standby = Component(
            kubeconfig=processes["scheduler"].kubeconfig, log_path=workdir / "scheduler-standby.log",
            port=standby_port,
            args=tuple(override(list(processes["scheduler"].args),
                                metrics_bind_address=f"127.0.0.1:{standby_port}",
                                health_probe_bind_address=f"127.0.0.1:{standby_port}")),
        )
        started.append(standby)
        standby.start(wait_ready=False)
        yield Story(server=server, tree=tree, scheduler=processes["scheduler"], standby=standby,
                    controller=processes["controller"], webhook=webhook)
    finally:
        for item in reversed(started):
            item.stop()
        control_plane.remove_apiserver("story")


# ---- the example -----------------------------------------------------------------------------


def example(kind: str, name: str) -> dict[str, Any]:
    for doc in load_documents((ROOT / "examples" / "policies.yaml").read_text()):
        if doc["kind"] == kind and doc["metadata"]["name"] == name:
            return doc
    raise AssertionError(f"examples/policies.yaml has no {kind} {name}")


def simulated_clusters(tmp_path: Path, policy: dict[str, Any], deployment: dict[str, Any],
                       uid: str) -> dict[str, int]:
    """What ``fleetsched simulate`` decides for the same Clusters, policy and Deployment.

    The Deployment's UID becomes the binding's spec.resource.uid, which seeds Karmada's replica
    tie-breaker (scheduler.md §9.2), so the live one is given to the simulation too.
    """
    template = copy.deepcopy(deployment)
    template["metadata"]["uid"] = uid
    inputs = tmp_path / "inputs.yaml"
    inputs.write_text(yaml.safe_dump_all([policy, template]))
    fleet = ROOT / "examples" / "fleet.yaml"
    command = [sys.executable, "-m", "fleetsched", "simulate", str(fleet), str(inputs), "-o", "json"]
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
    (binding,) = json.loads(done.stdout)["items"]
    return {c["name"]: c["replicas"] for c in binding["spec"]["clusters"]}


def scheduled_clusters(binding: dict[str, Any] | None, replicas: int) -> dict[str, int] | None:
    """spec.clusters once the scheduler has answered for ``replicas`` (condition and generation agree)."""
    if binding is None or binding["spec"].get("replicas") != replicas:
        return None
    status = binding.get("status") or {}
    scheduled = next((c for c in status.get("conditions") or () if c["type"] == "Scheduled"), None)
    if (scheduled is None or scheduled["status"] != "True"
            or status.get("schedulerObservedGeneration") != binding["metadata"]["generation"]):
        return None
    return {c["name"]: c["replicas"] for c in binding["spec"].get("clusters") or ()}


def test_from_policy_yaml_to_a_scheduled_binding_and_back(story: Story, tmp_path: Path) -> None:
    apply_with_status(story.server, [d for d in load_documents((ROOT / "examples" / "fleet.yaml").read_text())
                                     if d["kind"] == "Cluster"])
    policy, deployment = example("PropagationPolicy", "web"), example("Deployment", "web")
    story.kubectl("create", "namespace", "shop")
    story.server.apply(yaml.safe_dump_all([deployment, policy]))

    # the webhook defaulted the policy on its way in (permanent id), the controller derived the binding
    stored_policy = story.get("pp", "web", "-n", "shop")
    assert stored_policy is not None
    permanent_id = stored_policy["metadata"]["labels"][PP_LABEL]
    binding = story.wait_for("no ResourceBinding web-deployment",
                             lambda: story.get("rb", "web-deployment", "-n", "shop"))
    assert binding["metadata"]["labels"][PP_LABEL] == permanent_id
    assert binding["spec"]["placement"] == stored_policy["spec"]["placement"]
    template = story.get("deployment", "web", "-n", "shop")
    assert template is not None
    resource = binding["spec"]["resource"]
    assert (resource["apiVersion"], resource["kind"], resource["namespace"], resource["name"]) == (
        "apps/v1", "Deployment", "shop", "web")
    assert resource.get("uid") == template["metadata"]["uid"]
    owner = binding["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Deployment", "web", template["metadata"]["uid"])

    # scheduled as simulate schedules the same files
    expected = simulated_clusters(tmp_path, policy, deployment, template["metadata"]["uid"])
    assert sum(expected.values()) == deployment["spec"]["replicas"]
    replicas = deployment["spec"]["replicas"]
    clusters = story.wait_for(
        "the binding was never scheduled",
        lambda: scheduled_clusters(story.get("rb", "web-deployment", "-n", "shop"), replicas))
    assert clusters == expected
    wide = story.kubectl("get", "rb", "web-deployment", "-n", "shop", "-o", "wide")
    assert "True" in wide and "web-deployment" in wide
    events = json.loads(story.kubectl("get", "events", "-n", "shop", "-o", "json",
                                      "--field-selector=involvedObject.name=web-deployment"))
    assert "ScheduleBindingSucceed" in {e["reason"] for e in events["items"]}

    # two scheduler replicas, one Lease: the standby is alive, not ready, and never scheduled anything
    lease = story.get("lease", "fleetsched-scheduler", "-n", "fleetsched-system")
    assert lease is not None and lease["spec"]["holderIdentity"]
    assert story.standby.alive() and story.standby._get("/healthz")[0] == 200
    assert story.standby._get("/readyz") == (503, "not the leader")
    assert story.standby.metric("karmada_scheduler_schedule_attempts_total") == 0
    assert story.scheduler.metric("karmada_scheduler_schedule_attempts_total", result="scheduled") >= 1
    for step in ("Filter", "Score", "Select", "AssignReplicas"):  # Karmada's schedule_step values
        assert story.scheduler.metric(
            "karmada_scheduler_scheduling_algorithm_duration_seconds_count", schedule_step=step
        ) >= 1, step

    # scaling the Deployment reaches the binding and the scheduler divides again
    scaled = copy.deepcopy(deployment)
    scaled["spec"]["replicas"] = 15
    story.kubectl("scale", "deployment", "web", "-n", "shop", "--replicas=15")
    expected_scaled = simulated_clusters(tmp_path, policy, scaled, template["metadata"]["uid"])
    assert expected_scaled != expected and sum(expected_scaled.values()) == 15
    clusters = story.wait_for(
        "the scaled binding was never rescheduled",
        lambda: scheduled_clusters(story.get("rb", "web-deployment", "-n", "shop"), 15))
    assert clusters == expected_scaled

    # Deleting the Deployment: the garbage collector follows the binding's owner reference and
    # deletes the binding; the binding carries Karmada's karmada.io/binding-controller finalizer,
    # which in Karmada its binding controller removes once the Works are gone. The standalone
    # install has no binding controller, so the policy controller removes it: the binding is gone.
    assert binding["metadata"]["finalizers"] == [BINDING_FINALIZER]
    removed_before = story.controller.metric(
        "fleetsched_policy_controller_binding_finalizer_removals_total", result="removed")
    story.kubectl("delete", "deployment", "web", "-n", "shop", "--wait=true")
    story.wait_for("the binding outlived its Deployment",
                   lambda: story.get("rb", "web-deployment", "-n", "shop") is None, timeout=120)
    # (the controller counts after the API server answered, which the test may see first)
    story.wait_for("the removal was not counted", lambda: story.controller.metric(
        "fleetsched_policy_controller_binding_finalizer_removals_total",
        kind="ResourceBinding", result="removed") == removed_before + 1, timeout=10)
    assert "binding_finalizer_removed" in story.controller.log_tail(200)
    events = story.wait_for("no FinalizerRemoved Event", lambda: [
        e for e in json.loads(story.kubectl("get", "events", "-n", "shop", "-o", "json",
                                            "--field-selector=involvedObject.name=web-deployment"))["items"]
        if e["reason"] == "FinalizerRemoved"])
    assert BINDING_FINALIZER in events[0]["message"]


def test_an_invalid_policy_is_rejected_by_the_webhook_through_the_apiserver(story: Story) -> None:
    policy = example("PropagationPolicy", "web")
    policy["metadata"]["name"] = "web-invalid"
    # clusterAffinity and clusterAffinities together: Karmada's rule, Karmada's words
    policy["spec"]["placement"]["clusterAffinities"] = [
        {"affinityName": "primary", "clusterNames": ["aws-us-east-1"]}]
    story.kubectl("create", "namespace", "shop", check=False)
    with pytest.raises(RuntimeError) as rejected:
        story.server.apply(yaml.safe_dump(policy))
    message = str(rejected.value)
    assert 'admission webhook "propagationpolicy.karmada.io" denied the request' in message
    assert "clusterAffinities cannot co-exist with clusterAffinity" in message
    assert story.get("pp", "web-invalid", "-n", "shop") is None, "nothing half-written"
