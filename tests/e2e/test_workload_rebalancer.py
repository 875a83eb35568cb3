"""WorkloadRebalancer on a live control plane: the policy controller and the scheduler as processes.

Three Deployments, claimed by one PropagationPolicy with ordered clusterAffinities (``primary``:
m1, ``backup``: m2), are placed under ``backup`` while m1 has no room. m1 then gets room: the
bindings stay where they are (a steady schedule starts from the observed term). A WorkloadRebalancer
naming the three and a Deployment that does not exist, with ``ttlSecondsAfterFinished``, then:

- stamps each binding's ``spec.rescheduleTriggeredAt`` with the rebalancer's creationTimestamp,
  and the scheduler places each afresh, from the first term: all on m1 under ``primary``;
- reports the three ``Successful`` and the missing one ``Failed`` with Karmada's reason
  ``ReferencedBindingNotFound``, with ``observedGeneration`` and ``finishTime``;
- is deleted once its TTL has passed since ``finishTime``.

The controller runs as the install's ServiceAccount with manifests/controller/rbac.yaml, so a right
missing for any of these reads and writes fails the test.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from fleetsched.api._base import parse_time
from tests.e2e.test_install import service_account_kubeconfig
from tests.e2e.test_policy_controller import ControllerProcess
from tests.support.controlplane import APIServer, ControlPlane, wait_until
from tests.support.karmada import apply_with_status, binding_state, ready_cluster
from tests.support.processes import SchedulerProcess

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "rebalance"
WORKLOADS = ("alpha", "beta", "gamma")
TTL = 6


def deployment(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"group": "rebalanced"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


POLICY = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "PropagationPolicy",
    "metadata": {
        "name": "rebalanced",
        "namespace": NAMESPACE,
        "labels": {"propagationpolicy.karmada.io/permanent-id": "7a4c4f3e-1b2d-4c5e-8f90-123456789abc"},
        "finalizers": ["karmada.io/propagation-policy-controller"],
    },
    "spec": {
        "resourceSelectors": [
            {"apiVersion": "apps/v1", "kind": "Deployment",
             "labelSelector": {"matchLabels": {"group": "rebalanced"}}}
        ],
        "placement": {
            "clusterAffinities": [
                {"affinityName": "primary", "clusterNames": ["m1"]},
                {"affinityName": "backup", "clusterNames": ["m2"]},
            ],
            "replicaScheduling": {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"},
            },
        },
    },
}


def rebalancer() -> dict[str, Any]:
    workloads = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NAMESPACE, "name": name}
        for name in (*WORKLOADS, "missing")
    ]
    return {
        "apiVersion": "apps.karmada.io/v1alpha1",
        "kind": "WorkloadRebalancer",
        "metadata": {"name": "fresh-start"},
        "spec": {"workloads": workloads, "ttlSecondsAfterFinished": TTL},
    }


def get(server: APIServer, *args: str) -> dict[str, Any] | None:
    out = server.kubectl("get", *args, "-o", "json", "--ignore-not-found")
    return json.loads(out) if out.strip() else None


def bindings(server: APIServer) -> dict[str, dict[str, Any]]:
    found = {}
    for name in WORKLOADS:
        obj = get(server, "rb", "-n", NAMESPACE, f"{name}-deployment")
        if obj is not None:
            found[name] = obj
    return found


def test_a_rebalancer_gives_its_workloads_a_fresh_placement_and_goes_after_its_ttl(
    control_plane: ControlPlane,
    add_apiserver: Callable[..., APIServer],
    start_scheduler: Callable[..., SchedulerProcess],
    tmp_path: Path,
) -> None:
    server = add_apiserver("rebalancer", apply_crds=True)
    server.kubectl("create", "namespace", NAMESPACE)
    apply_with_status(server, [ready_cluster("m1", 0), ready_cluster("m2", 10)])
    server.kubectl("create", "namespace", "fleetsched-system")
    server.kubectl("apply", "-f", str(ROOT / "manifests" / "controller" / "rbac.yaml"))
    kubeconfig = service_account_kubeconfig(server, "fleetsched-controller", tmp_path / "sa.kubeconfig")
    controller = ControllerProcess(kubeconfig=kubeconfig, log_path=tmp_path / "controller.log",
                                   extra_args=("--leader-elect=false",))
    controller.start(timeout=90)
    try:
        scheduler = start_scheduler(server, "--leader-elect=false")

        def logs() -> str:
            return f"--- controller:\n{controller.log_tail(30)}\n--- scheduler:\n{scheduler.log_tail(30)}"

        server.apply(yaml.safe_dump_all([POLICY, *(deployment(name) for name in WORKLOADS)]))

        # 1. m1 has no room: every binding is placed under the second term.
        def placed_under(term: str, cluster: str) -> bool:
            found = bindings(server)
            return len(found) == len(WORKLOADS) and all(
                binding_state(b) == {"scheduled": True, "reason": "Success", "affinityName": term,
                                     "clusters": {cluster: 2}}
                for b in found.values()
            )

        wait_until(lambda: placed_under("backup", "m2"), timeout=40,
                   message=lambda: f"never placed under backup: {bindings(server)}\n{logs()}")
        last_scheduled = {n: b["status"]["lastScheduledTime"] for n, b in bindings(server).items()}

        # 2. m1 gets room. A steady schedule starts from the observed term: nothing moves.
        apply_with_status(server, [ready_cluster("m1", 10)])
        time.sleep(2)  # also puts the rebalancer's creation (to the second) after the last schedule
        assert placed_under("backup", "m2"), f"moved without a rebalancer: {bindings(server)}"

        # 3. The rebalancer reports Karmada's results, sorted by apiVersion, kind, namespace, name.
        server.apply(yaml.safe_dump(rebalancer()))

        def finished() -> dict[str, Any] | None:
            obj = get(server, "workloadrebalancer", "fresh-start")
            return obj if obj is not None and (obj.get("status") or {}).get("finishTime") else None

        done = wait_until(finished, timeout=20, message=lambda: f"never finished\n{logs()}")
        created_at = done["metadata"]["creationTimestamp"]
        status = done["status"]
        assert status["observedGeneration"] == done["metadata"]["generation"] == 1
        observed = status["observedWorkloads"]
        assert [(o["workload"]["name"], o.get("result"), o.get("reason")) for o in observed] == [
            ("alpha", "Successful", None),
            ("beta", "Successful", None),
            ("gamma", "Successful", None),
            ("missing", "Failed", "ReferencedBindingNotFound"),
        ]
        finish = parse_time(status["finishTime"])
        assert finish >= parse_time(created_at)

        # 4. Each binding is stamped with its creation and scheduled afresh, from the first term.
        wait_until(lambda: placed_under("primary", "m1"), timeout=40,
                   message=lambda: f"never rescheduled to primary: {bindings(server)}\n{logs()}")
        for name, binding in bindings(server).items():
            assert binding["spec"]["rescheduleTriggeredAt"] == created_at, name
            assert parse_time(binding["status"]["lastScheduledTime"]) >= parse_time(created_at), name
            assert binding["status"]["lastScheduledTime"] != last_scheduled[name], name

        # 5. Deleted once ttlSecondsAfterFinished has passed since finishTime (not before).
        wait_until(lambda: get(server, "workloadrebalancer", "fresh-start") is None, timeout=30,
                   message=lambda: f"never deleted after its TTL\n{logs()}")
        gone = dt.datetime.now(dt.UTC)
        assert gone >= finish + dt.timedelta(seconds=TTL)
        # the fresh placements stay
        assert placed_under("primary", "m1"), bindings(server)
    finally:
        controller.stop()
